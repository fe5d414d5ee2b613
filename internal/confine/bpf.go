package confine

import (
	"errors"
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Insn is one classic BPF instruction, laid out as the kernel's struct
// sock_filter.
type Insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
const (
	bpfLdAbsW = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgtK   = 0x25 // BPF_JMP | BPF_JGT | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	retKillProcess = 0x80000000
	retKillThread  = 0x00000000
	retTrap        = 0x00030000
	retErrno       = 0x00050000
	retTrace       = 0x7ff00000
	retLog         = 0x7ffc0000
	retAllow       = 0x7fff0000

	errnoEPERM  = 1
	errnoENOSYS = 38 // the same number on every architecture Compile knows

	// offsets in struct seccomp_data (little-endian 64-bit arguments)
	offNr   = 0
	offArch = 4
	offArgs = 16

	x32Bit = 0x40000000 // __X32_SYSCALL_BIT
	// maxInsns is the kernel's limit on a filter's length (BPF_MAXINSNS).
	maxInsns = 4096
)

type arch struct {
	name  specs.Arch // the profile's name for it
	audit uint32     // AUDIT_ARCH_*
	x32   bool       // x86_64: refuse the x32 ABI's system calls
}

// action is the seccomp return value of a profile action.
func action(a specs.LinuxSeccompAction, errnoRet *uint) (uint32, error) {
	errno := uint32(errnoEPERM)
	if errnoRet != nil {
		if *errnoRet > 0xffff {
			return 0, fmt.Errorf("seccomp: errno %d out of range", *errnoRet)
		}
		errno = uint32(*errnoRet)
	}
	switch a {
	case specs.ActAllow:
		return retAllow, nil
	case specs.ActErrno:
		return retErrno | errno, nil
	case specs.ActKill, specs.ActKillThread:
		return retKillThread, nil
	case specs.ActKillProcess:
		return retKillProcess, nil
	case specs.ActTrap:
		return retTrap, nil
	case specs.ActTrace:
		return retTrace | errno, nil
	case specs.ActLog:
		return retLog, nil
	}
	return 0, fmt.Errorf("seccomp: action %q is not supported", a)
}

// cond is one argument comparison.
type cond = specs.LinuxSeccompArg

// rule is one rule for a system call: its action when all conditions hold
// (none: always).
type rule struct {
	act   uint32
	conds []cond
}

// Compile builds the classic BPF seccomp filter for profile p on this
// machine's architecture, with the meaning runc gives an OCI profile
// (through libseccomp) and the same results:
//
//   - a system call whose name the architecture does not have is left out,
//     as are rules whose action is the default one;
//   - the conditions of one rule must all hold, except that a rule
//     comparing one argument more than once becomes one rule per condition
//     (runc's rule, see opencontainers/runc#2735); comparisons are of the
//     whole 64-bit argument;
//   - a rule without conditions wins over conditional ones, which are
//     tried in the profile's order; the default action ends the search;
//   - system call numbers above the highest one the profile names fail
//     with ENOSYS, as runc's filters make them (so that a C library falls
//     back from a system call newer than the profile).
//
// What differs: the filter checks only this machine's architecture. A
// system call made through another ABI (i386's int 0x80, x32) gets the
// default action, where libseccomp would look it up in that ABI's table.
func Compile(p *specs.LinuxSeccomp) ([]Insn, error) {
	if p == nil {
		return nil, errors.New("seccomp: no profile")
	}
	if nativeArch.audit == 0 || len(sysnum) == 0 {
		return nil, errors.New("seccomp: no system call table for this architecture")
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	rules := map[uint32][]rule{}
	var last uint32
	named := false
	for _, sc := range p.Syscalls {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, err
		}
		var rs []rule
		if act != def {
			rs, err = splitRule(act, sc.Args)
			if err != nil {
				return nil, err
			}
		}
		for _, name := range sc.Names {
			nr, ok := sysnum[name]
			if !ok {
				continue // not a system call of this architecture
			}
			if !named || nr > last {
				last, named = nr, true
			}
			rules[nr] = append(rules[nr], rs...)
		}
	}

	var a asm
	// the architecture
	a.ld(offArch)
	native := a.label()
	a.jump(bpfJeqK, nativeArch.audit, native, -1)
	a.ret(def)
	a.place(native)
	a.ld(offNr)
	if nativeArch.x32 {
		notX32 := a.label()
		a.jump(bpfJgeK, x32Bit, -1, notX32)
		a.ret(def)
		a.place(notX32)
	}
	if named {
		known := a.label()
		a.jump(bpfJgtK, last, -1, known)
		a.ret(retErrno | errnoENOSYS)
		a.place(known)
	}
	nrs := make([]uint32, 0, len(rules))
	for nr, rs := range rules {
		if len(rs) > 0 {
			nrs = append(nrs, nr)
		}
	}
	slices.Sort(nrs)
	for _, nr := range nrs {
		next := a.label()
		a.jump(bpfJeqK, nr, -1, next)
		rs := rules[nr]
		if i := slices.IndexFunc(rs, func(r rule) bool { return len(r.conds) == 0 }); i >= 0 {
			a.ret(rs[i].act)
		} else {
			for _, r := range rs {
				fail := a.label()
				for _, c := range r.conds {
					if err := a.compare(c, fail); err != nil {
						return nil, err
					}
				}
				a.ret(r.act)
				a.place(fail)
			}
			// the accumulator holds an argument now: no other system
			// call can be matched from here
			a.ret(def)
		}
		a.place(next)
	}
	a.ret(def)
	return a.assemble()
}

// splitRule makes the rules of one profile entry (see Compile).
func splitRule(act uint32, args []specs.LinuxSeccompArg) ([]rule, error) {
	if len(args) == 0 {
		return []rule{{act: act}}, nil
	}
	seen := map[uint]bool{}
	repeated := false
	for _, c := range args {
		if c.Index > 5 {
			return nil, fmt.Errorf("seccomp: argument index %d out of range", c.Index)
		}
		repeated = repeated || seen[c.Index]
		seen[c.Index] = true
	}
	if !repeated {
		return []rule{{act: act, conds: args}}, nil
	}
	out := make([]rule, len(args))
	for i, c := range args {
		out[i] = rule{act: act, conds: []cond{c}}
	}
	return out, nil
}

// asm assembles a program whose jumps name labels.
type asm struct {
	prog   []insn
	labels []int // label → position, -1 until placed
}

type insn struct {
	code   uint16
	k      uint32
	jt, jf int // labels; -1: the next instruction
}

func (a *asm) label() int {
	a.labels = append(a.labels, -1)
	return len(a.labels) - 1
}

func (a *asm) place(l int)   { a.labels[l] = len(a.prog) }
func (a *asm) ld(off uint32) { a.prog = append(a.prog, insn{code: bpfLdAbsW, k: off, jt: -1, jf: -1}) }
func (a *asm) and(k uint32)  { a.prog = append(a.prog, insn{code: bpfAndK, k: k, jt: -1, jf: -1}) }
func (a *asm) ret(k uint32)  { a.prog = append(a.prog, insn{code: bpfRetK, k: k, jt: -1, jf: -1}) }
func (a *asm) jump(code uint16, k uint32, jt, jf int) {
	a.prog = append(a.prog, insn{code: code, k: k, jt: jt, jf: jf})
}

// compare emits c: it falls through when c holds and jumps to fail when
// not.
func (a *asm) compare(c cond, fail int) error {
	lo, hi := uint32(offArgs+8*c.Index), uint32(offArgs+8*c.Index+4)
	vlo, vhi := uint32(c.Value), uint32(c.Value>>32)
	pass := a.label()
	switch c.Op {
	case specs.OpEqualTo:
		a.ld(hi)
		a.jump(bpfJeqK, vhi, -1, fail)
		a.ld(lo)
		a.jump(bpfJeqK, vlo, -1, fail)
	case specs.OpNotEqual:
		a.ld(hi)
		a.jump(bpfJeqK, vhi, -1, pass)
		a.ld(lo)
		a.jump(bpfJeqK, vlo, fail, -1)
	case specs.OpMaskedEqual: // (arg & Value) == ValueTwo
		dlo, dhi := uint32(c.ValueTwo), uint32(c.ValueTwo>>32)
		a.ld(hi)
		a.and(vhi)
		a.jump(bpfJeqK, dhi, -1, fail)
		a.ld(lo)
		a.and(vlo)
		a.jump(bpfJeqK, dlo, -1, fail)
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		a.ld(hi)
		a.jump(bpfJgtK, vhi, pass, -1)
		a.jump(bpfJeqK, vhi, -1, fail)
		a.ld(lo)
		if c.Op == specs.OpGreaterThan {
			a.jump(bpfJgtK, vlo, -1, fail)
		} else {
			a.jump(bpfJgeK, vlo, -1, fail)
		}
	case specs.OpLessThan, specs.OpLessEqual:
		a.ld(hi)
		a.jump(bpfJgtK, vhi, fail, -1)
		a.jump(bpfJeqK, vhi, -1, pass)
		a.ld(lo)
		if c.Op == specs.OpLessThan {
			a.jump(bpfJgeK, vlo, fail, -1)
		} else {
			a.jump(bpfJgtK, vlo, fail, -1)
		}
	default:
		return fmt.Errorf("seccomp: comparison %q is not supported", c.Op)
	}
	a.place(pass)
	return nil
}

// assemble resolves the labels into relative jumps.
func (a *asm) assemble() ([]Insn, error) {
	if len(a.prog) > maxInsns {
		return nil, fmt.Errorf("seccomp: filter of %d instructions is longer than the kernel's %d", len(a.prog), maxInsns)
	}
	out := make([]Insn, len(a.prog))
	for pc, in := range a.prog {
		off := func(l int) (uint8, error) {
			if l < 0 {
				return 0, nil
			}
			d := a.labels[l] - pc - 1
			if a.labels[l] < 0 || d < 0 || d > 255 {
				return 0, fmt.Errorf("seccomp: jump at %d to %d out of range", pc, a.labels[l])
			}
			return uint8(d), nil
		}
		jt, err := off(in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(in.jf)
		if err != nil {
			return nil, err
		}
		out[pc] = Insn{Code: in.code, Jt: jt, Jf: jf, K: in.k}
	}
	return out, nil
}
