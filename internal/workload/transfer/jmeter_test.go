package transfer_test

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/workload/transfer"
)

// runJMeter downloads a file and a small tree from vsftpd in one instance
// of pl with study 004's JMeter: every byte verified, JMeter's own times;
// a damaged file and upload are failures with their reasons.
func runJMeter(t *testing.T, pl string, base platform.Spec) {
	if testing.Short() {
		t.Skip("starts vsftpd and JMeter")
	}
	needHost(t, "jmeter", "mvn")
	p := newPlatform(t, pl)
	for _, data := range []map[string]string{{"file": "4m"}, {"tree": "12/1m"}} {
		params := map[string]string{"client": transfer.ClientJMeter}
		for k, v := range data {
			params[k] = v
		}
		res, err := runOne(t, transfer.FTPDef, params, env(p, base, 1))
		if err != nil {
			t.Fatalf("%v: %v", data, err)
		}
		if len(res) != 1 || res[0].Tags["tool"] != transfer.ClientJMeter {
			t.Fatalf("%v: results %+v", data, res)
		}
		if base.Network != "" && res[0].Tags["network"] != base.Network {
			t.Errorf("%v: network %q, want %q", data, res[0].Tags["network"], base.Network)
		}
		got := map[string]float64{}
		for _, m := range res[0].Metrics {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			got[m.Name] = m.Value
		}
		for _, m := range []string{"transfer_time", "throughput", "file_latency_mean", "latency_mean", "requests", "files"} {
			if !(got[m] > 0) {
				t.Errorf("%s %v: %s = %v (%v)", pl, data, m, got[m], got)
			}
		}
		if got["requests"] != got["files"] {
			t.Errorf("%s %v: %v requests for %v files", pl, data, got["requests"], got["files"])
		}
		t.Logf("%s %v: %v", pl, data, got)
	}
	if _, err := runOne(t, transfer.FTPDef, map[string]string{"client": transfer.ClientJMeter, "file": "1m", "inject": "truncate"}, env(p, base, 1)); err == nil || !strings.Contains(err.Error(), "bytes, want") {
		t.Errorf("a damaged download was not a failure: %v", err)
	}
	if _, err := transfer.FTPDef.Resolve(map[string]string{"client": transfer.ClientJMeter, "direction": "upload"}); err == nil {
		t.Error("client=jmeter accepted an upload")
	}
	p.check(t)
}

func TestNativeJMeter(t *testing.T) {
	needHost(t, "vsftpd")
	runJMeter(t, "native", platform.Spec{})
}

func TestDockerJMeter(t *testing.T) { runJMeter(t, "docker", platform.Spec{}) }

// Study 004's layout: the FTP server reached through Docker's published
// ports, its passive ports published at their own numbers and named at the
// host's address in its replies.
func TestDockerNATJMeter(t *testing.T) {
	runJMeter(t, "docker", platform.Spec{Network: platform.NetNAT})
}

// TestNativePostalMessages: study 004's postal stopped after a count of
// messages (the paper's "up to 500 messages" from 10 threads, fewer and
// smaller here): messages/min over the time they took, every message
// postal logged delivered; a lost message fails.
func TestNativePostalMessages(t *testing.T) {
	needHost(t, "postfix")
	runPostalMessages(t, "native")
}

func TestDockerPostalMessages(t *testing.T) { runPostalMessages(t, "docker") }

func runPostalMessages(t *testing.T, pl string) {
	if testing.Short() {
		t.Skip("runs postal")
	}
	needHost(t, "postal")
	p := newPlatform(t, pl)
	params := map[string]string{"client": "postal", "postal-messages": "40", "size": "64k", "threads": "4"}
	res, err := runOne(t, transfer.SMTPDef, params, env(p, platform.Spec{}, 1))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range res[0].Metrics {
		got[m.Name] = m.Value
	}
	if got["messages"] != 40 || !(got["messages_per_min"] > 0) || got["messages_reported"] < 40 || got["delivered"] < got["messages_reported"] || res[0].Tags["data"] != "postal/40/65536" {
		t.Errorf("postal: %v %v", res[0].Tags, got)
	}
	t.Logf("%v", got)
	params["inject"] = "truncate"
	if _, err := runOne(t, transfer.SMTPDef, params, env(p, platform.Spec{}, 1)); err == nil {
		t.Error("a lost message was not a failure")
	} else {
		t.Log(err)
	}
	p.check(t)
}
