package confine

// nativeArch is the architecture Compile builds filters for: x86_64, whose
// x32 system calls (numbers with bit 30 set) the filter refuses.
var nativeArch = arch{name: "SCMP_ARCH_X86_64", audit: 0xc000003e, x32: true}
