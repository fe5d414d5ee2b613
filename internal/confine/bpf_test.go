package confine

import (
	"encoding/binary"
	"runtime"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// data is a struct seccomp_data.
type data struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d data) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// runBPF interprets the instructions Compile emits, as the kernel would.
func runBPF(t *testing.T, prog []Insn, d data) uint32 {
	t.Helper()
	mem := d.bytes()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case bpfLdAbsW:
			acc = binary.LittleEndian.Uint32(mem[in.K:])
		case bpfAndK:
			acc &= in.K
		case bpfJeqK:
			jump(acc == in.K)
		case bpfJgtK:
			jump(acc > in.K)
		case bpfJgeK:
			jump(acc >= in.K)
		case bpfRetK:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

func nr(t *testing.T, name string) uint32 {
	t.Helper()
	n, ok := sysnum[name]
	if !ok {
		t.Fatalf("no system call %s here", name)
	}
	return n
}

func needTable(t *testing.T) {
	if nativeArch.audit == 0 {
		t.Skipf("no system call table for %s", runtime.GOARCH)
	}
}

func TestCompileDockerProfile(t *testing.T) {
	needTable(t)
	p, err := DockerProfile(DockerCaps)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Docker's profile: %d instructions", len(prog))
	eperm, enosys := uint32(retErrno|errnoEPERM), uint32(retErrno|errnoENOSYS)
	call := func(name string, args ...uint64) data {
		d := data{nr: nr(t, name), arch: nativeArch.audit}
		copy(d.args[:], args)
		return d
	}
	const cloneNewNS = 0x00020000
	cases := []struct {
		what string
		d    data
		want uint32
	}{
		{"read", call("read"), retAllow},
		{"write", call("write"), retAllow},
		{"execve", call("execve"), retAllow},
		{"personality(0)", call("personality", 0), retAllow},
		{"personality(0xffffffff) (query)", call("personality", 0xffffffff), retAllow},
		{"personality(ADDR_NO_RANDOMIZE)", call("personality", 0x0040000), eperm},
		{"personality(-1 as 64 bits)", call("personality", ^uint64(0)), eperm},
		{"clone(SIGCHLD)", call("clone", 17), retAllow},
		{"clone(CLONE_NEWNS)", call("clone", cloneNewNS|17), eperm},
		{"clone3 without CAP_SYS_ADMIN", call("clone3"), enosys},
		{"keyctl", call("keyctl"), eperm},
		{"unshare without CAP_SYS_ADMIN", call("unshare"), eperm},
		{"mount without CAP_SYS_ADMIN", call("mount"), eperm},
		{"socket(AF_INET)", call("socket", 2), retAllow},
		{"socket(AF_UNIX)", call("socket", 1), retAllow},
		{"a number beyond the profile's last", data{nr: 4000, arch: nativeArch.audit}, enosys},
		{"another architecture", data{nr: nr(t, "read"), arch: 0x40000003}, eperm},
	}
	if nativeArch.x32 {
		cases = append(cases, struct {
			what string
			d    data
			want uint32
		}{"an x32 system call", data{nr: x32Bit | nr(t, "read"), arch: nativeArch.audit}, eperm})
	}
	for _, c := range cases {
		if got := runBPF(t, prog, c.d); got != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.what, got, c.want)
		}
	}

	// with CAP_SYS_ADMIN, the profile allows what the capability guards
	admin, err := DockerProfile(append([]string{"CAP_SYS_ADMIN"}, DockerCaps...))
	if err != nil {
		t.Fatal(err)
	}
	if prog, err = Compile(admin); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"clone3", "unshare", "mount"} {
		if got := runBPF(t, prog, call(name)); got != retAllow {
			t.Errorf("%s with CAP_SYS_ADMIN: %#x, want allow", name, got)
		}
	}
	if got := runBPF(t, prog, call("clone", cloneNewNS)); got != retAllow {
		t.Errorf("clone(CLONE_NEWNS) with CAP_SYS_ADMIN: %#x, want allow", got)
	}
}

// TestCompileComparisons checks every comparison on 64-bit values whose
// halves differ in every way, against Go's own comparison.
func TestCompileComparisons(t *testing.T) {
	needTable(t)
	values := []uint64{0, 1, 5, 0xffffffff, 0x100000000, 0x100000005, 0x500000000, 0x500000001, 0x4ffffffff, ^uint64(0)}
	ops := map[specs.LinuxSeccompOperator]func(a, v uint64) bool{
		specs.OpEqualTo:      func(a, v uint64) bool { return a == v },
		specs.OpNotEqual:     func(a, v uint64) bool { return a != v },
		specs.OpGreaterThan:  func(a, v uint64) bool { return a > v },
		specs.OpGreaterEqual: func(a, v uint64) bool { return a >= v },
		specs.OpLessThan:     func(a, v uint64) bool { return a < v },
		specs.OpLessEqual:    func(a, v uint64) bool { return a <= v },
	}
	for op, holds := range ops {
		for _, v := range values {
			p := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
				{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 2, Value: v, Op: op}}},
			}}
			prog, err := Compile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range values {
				d := data{nr: nr(t, "read"), arch: nativeArch.audit}
				d.args[2] = a
				if got, want := runBPF(t, prog, d) == retAllow, holds(a, v); got != want {
					t.Errorf("arg %#x %s %#x: allowed %v, want %v", a, op, v, got, want)
				}
			}
		}
	}
	// masked: (arg & Value) == ValueTwo
	mask, datum := uint64(0x1_0000_00f0), uint64(0x1_0000_0010)
	p := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: mask, ValueTwo: datum, Op: specs.OpMaskedEqual}}},
	}}
	prog, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(values, 0x1_0000_0013, 0x1_0000_0110, 0x0_0000_0010, 0x3_ffff_ff1f) {
		d := data{nr: nr(t, "read"), arch: nativeArch.audit, args: [6]uint64{a}}
		if got, want := runBPF(t, prog, d) == retAllow, a&mask == datum; got != want {
			t.Errorf("arg %#x masked %#x == %#x: allowed %v, want %v", a, mask, datum, got, want)
		}
	}
}

func TestCompileRules(t *testing.T) {
	needTable(t)
	enoent := uint(2)
	p := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		// two conditions on different arguments: both must hold
		{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}, {Index: 1, Value: 2, Op: specs.OpEqualTo}}},
		// two on the same argument: either (runc's rule)
		{Names: []string{"write"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}, {Index: 0, Value: 2, Op: specs.OpEqualTo}}},
		// an unconditional rule wins over a conditional one
		{Names: []string{"close"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}}},
		{Names: []string{"close", "no_such_call"}, Action: specs.ActAllow},
		{Names: []string{"openat"}, Action: specs.ActErrno, ErrnoRet: &enoent},
		// the default action's rules are left out
		{Names: []string{"mount"}, Action: specs.ActErrno},
	}}
	prog, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	try := func(name string, args ...uint64) uint32 {
		d := data{nr: nr(t, name), arch: nativeArch.audit}
		copy(d.args[:], args)
		return runBPF(t, prog, d)
	}
	for _, c := range []struct {
		what string
		got  uint32
		want uint32
	}{
		{"read(1, 2)", try("read", 1, 2), retAllow},
		{"read(1, 3)", try("read", 1, 3), retErrno | errnoEPERM},
		{"write(1)", try("write", 1), retAllow},
		{"write(2)", try("write", 2), retAllow},
		{"write(3)", try("write", 3), retErrno | errnoEPERM},
		{"close(7)", try("close", 7), retAllow},
		{"openat", try("openat"), retErrno | 2},
		{"mount", try("mount"), retErrno | errnoEPERM},
		{"lseek", try("lseek"), retErrno | errnoEPERM},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.what, c.got, c.want)
		}
	}
	// the ENOSYS bound is the highest number named, mount's here
	if got := runBPF(t, prog, data{nr: nr(t, "mount") + 1, arch: nativeArch.audit}); got != retErrno|errnoENOSYS && nr(t, "mount")+1 > nr(t, "openat") {
		t.Errorf("a number after the last named: %#x, want ENOSYS", got)
	}

	for _, bad := range []*specs.LinuxSeccomp{
		nil,
		{DefaultAction: "SCMP_ACT_NOTIFY"},
		{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}},
		{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Op: "SCMP_CMP_SOMETIMES"}}}}},
	} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("Compile(%+v) succeeded", bad)
		}
	}
}

func TestDockerCaps(t *testing.T) {
	m, err := CapMask(DockerCaps)
	if err != nil {
		t.Fatal(err)
	}
	if m != DockerCapBits || DockerCapMask() != "00000000a80425fb" {
		t.Errorf("Docker's capabilities are %#x, DockerCapBits %#x, mask %s", m, uint64(DockerCapBits), DockerCapMask())
	}
	names := CapNames(m)
	if len(names) != len(DockerCaps) || names[0] != "chown" || names[len(names)-1] != "setfcap" {
		t.Errorf("CapNames = %v", names)
	}
	if back, err := CapMask(names); err != nil || back != m {
		t.Errorf("CapMask(CapNames) = %#x, %v", back, err)
	}
	if _, err := CapMask([]string{"CAP_NOPE"}); err == nil {
		t.Error("an unknown capability was accepted")
	}
	// devices.list in a Docker container, sorted as strings
	want := "b *:* m,c *:* m,c 10:200 rwm,c 136:* rwm,c 1:3 rwm,c 1:5 rwm,c 1:7 rwm,c 1:8 rwm,c 1:9 rwm,c 5:0 rwm,c 5:1 rwm,c 5:2 rwm"
	if got := DockerDevicesList(); got != want {
		t.Errorf("DockerDevicesList = %s\nwant %s", got, want)
	}
}
