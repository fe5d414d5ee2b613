package confine

// nativeArch is the architecture Compile builds filters for.
var nativeArch = arch{name: "SCMP_ARCH_AARCH64", audit: 0xc00000b7}
