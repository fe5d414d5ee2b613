package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

func openKVM() (bool, error) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// accelVerdict is the cached result of the KVM probe.
type accelVerdict struct {
	Key    string    `json:"key"`
	Accel  string    `json:"accel"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// accelKey changes when the host kernel, qemu or the guest kernel change.
func (p *Platform) accelKey() string {
	var u syscall.Utsname
	syscall.Uname(&u)
	rel := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	q := ""
	if path, err := lookPath(Binary); err == nil {
		if st, err := os.Stat(path); err == nil {
			q = fmt.Sprintf("%s:%d:%d", path, st.Size(), st.ModTime().Unix())
		}
	}
	k, _ := p.findKernel()
	return fmt.Sprintf("host=%s qemu=%s kernel=%s", rel, q, k.Path)
}

// resolveAccel decides the accelerator once per platform: the option, or
// for auto the cached or freshly probed verdict.
func (p *Platform) resolveAccel(ctx context.Context) (accel, why string, err error) {
	p.accelMu.Lock()
	defer p.accelMu.Unlock()
	if p.accel != "" {
		return p.accel, p.accelWhy, nil
	}
	set := func(a, w string) (string, string, error) {
		p.accel, p.accelWhy = a, w
		return a, w, nil
	}
	switch p.accelOpt {
	case AccelTCG:
		return set(AccelTCG, "option accel=tcg")
	case AccelKVM:
		if _, err := openKVM(); err != nil {
			return "", "", fmt.Errorf("qemu: accel=kvm but /dev/kvm cannot be opened: %w", err)
		}
		return set(AccelKVM, "option accel=kvm")
	}
	if _, err := openKVM(); err != nil {
		return set(AccelTCG, fmt.Sprintf("/dev/kvm: %v", err))
	}
	cache := filepath.Join(p.env.StateDir, "qemu", "accel.json")
	key := p.accelKey()
	if b, err := os.ReadFile(cache); err == nil {
		var v accelVerdict
		if json.Unmarshal(b, &v) == nil && v.Key == key && (v.Accel == AccelKVM || v.Accel == AccelTCG) {
			return set(v.Accel, v.Reason+" (cached "+v.At.Format(time.RFC3339)+")")
		}
	}
	v := accelVerdict{Key: key, At: time.Now().UTC()}
	if err := p.probeKVM(ctx); err != nil {
		if ctx.Err() != nil {
			return "", "", fmt.Errorf("qemu: KVM probe interrupted: %w", ctx.Err())
		}
		v.Accel, v.Reason = AccelTCG, fmt.Sprintf("KVM probe failed: %v", err)
	} else {
		v.Accel, v.Reason = AccelKVM, "KVM probe booted"
	}
	if _, err := p.privateDir(); err == nil {
		b, _ := json.MarshalIndent(v, "", "  ")
		os.WriteFile(cache, append(b, '\n'), 0o644)
	}
	return set(v.Accel, v.Reason)
}

// probeKVM boots a small VM under KVM and waits up to ProbeTimeout for its
// agent's hello.
func (p *Platform) probeKVM(ctx context.Context) error {
	if p.env.Log != nil {
		fmt.Fprintf(p.env.Log, "qemu: probing KVM (a test boot of up to %v)\n", ProbeTimeout)
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	in, err := p.create(pctx, platform.Spec{Name: "kvm-probe", CPUs: 1, Memory: 256 << 20, Network: platform.NetNone}, createOpts{accel: AccelKVM, noDisk: true})
	if err != nil {
		return err
	}
	return in.Close(context.WithoutCancel(ctx))
}
