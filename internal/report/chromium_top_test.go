package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var probeRe = regexp.MustCompile(`data-probe="(\d+) (\d+)"`)

// TestHTMLTopInChromium opens the report in headless Chromium at desktop
// (1280) and phone (390) widths: a screenshot of the top of the page at
// each, no horizontal scrolling (the document is no wider than the
// window, measured by a probe copy of the page with a script; the report
// itself has none), no console error, and the page leads with the
// verdict and its overview figure, with the environment and the noise
// warnings folded at the end. With ISOBENCH_REPORT_OUT=DIR the pages and
// screenshots are kept in DIR.
func TestHTMLTopInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if keep := os.Getenv("ISOBENCH_REPORT_OUT"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := synthDoc(t)
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Structure: verdict first, environment and noise last and folded.
	iv, iw, ie, in := strings.Index(page, `<section id="verdict"`), strings.Index(page, `<section class="workload"`),
		strings.Index(page, `<section id="environment"`), strings.Index(page, `<section id="noise"`)
	if !(iv >= 0 && iv < iw && iw < ie && ie < in) {
		t.Fatalf("sections out of order: verdict %d, workloads %d, environment %d, noise %d", iv, iw, ie, in)
	}
	if !strings.Contains(section(page, "verdict"), `class="chart overview"`) {
		t.Error("the verdict has no overview figure")
	}
	if env := section(page, "environment"); !strings.Contains(env, "<details") {
		t.Error("the environment is not folded")
	}
	if noise := section(page, "noise"); strings.Contains(noise, "warnbox") && !strings.Contains(noise, "<details") {
		t.Error("the noise warnings are not folded")
	}
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Headless Chromium's window is at least 500 CSS pixels wide, so the
	// page is shown in an iframe exactly as wide as the screen under test
	// (its own viewport: the page's media queries apply) and the screenshot
	// is cut to that width. A probe script in the frame page (the report
	// has no script) writes the report's scrollWidth and innerWidth.
	for _, width := range []int{1280, 390} {
		frame := filepath.Join(dir, fmt.Sprintf("frame-%d.html", width))
		html := fmt.Sprintf(`<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0"><iframe id="f" src="report.html" style="border:0;display:block;width:%dpx;height:900px"></iframe>`+
			`<script>document.getElementById("f").onload=function(){var d=this.contentDocument.documentElement;document.body.setAttribute("data-probe",d.scrollWidth+" "+this.contentWindow.innerWidth)}</script></body></html>`, width)
		if err := os.WriteFile(frame, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		size := fmt.Sprintf("--window-size=%d,900", max(width, 500))
		shot := filepath.Join(dir, fmt.Sprintf("top-%d.png", width))
		os.Remove(shot)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0", "--screenshot="+shot, size, "file://"+frame)...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium --screenshot at %d: %v\n%s", width, err, stderr.String())
		}
		for _, bad := range []string{"Uncaught", "CONSOLE(", `:CONSOLE`} {
			if strings.Contains(stderr.String(), bad) {
				t.Errorf("width %d: console message %q:\n%s", width, bad, stderr.String())
			}
		}
		fh, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		full, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		if bd := full.Bounds(); bd.Dx() < width || bd.Dy() != 900 {
			t.Fatalf("screenshot is %v, want at least %d×900", bd, width)
		}
		img := image.NewRGBA(image.Rect(0, 0, width, 900))
		draw.Draw(img, img.Bounds(), full, full.Bounds().Min, draw.Src)
		if f, err := os.Create(shot); err == nil {
			png.Encode(f, img)
			f.Close()
		}
		colours, nonWhite := colourStats(img)
		t.Logf("%s: %d colours, %.1f%% non-white", shot, colours, 100*nonWhite)
		if colours < 100 || nonWhite < 0.03 {
			t.Errorf("width %d: the top of the page looks blank (%d colours, %.1f%% non-white)", width, colours, 100*nonWhite)
		}
		var out bytes.Buffer
		stderr.Reset()
		cmd = exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0", "--dump-dom", size, "file://"+frame)...)
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium --dump-dom at %d: %v\n%s", width, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "Uncaught") {
			t.Errorf("width %d: script error:\n%s", width, stderr.String())
		}
		m := probeRe.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("width %d: the probe wrote nothing:\n%s", width, stderr.String())
		}
		sw, _ := strconv.Atoi(m[1])
		iw, _ := strconv.Atoi(m[2])
		t.Logf("width %d: scrollWidth %d, innerWidth %d", width, sw, iw)
		if iw != width {
			t.Errorf("the report's window is %d wide, want %d", iw, width)
		}
		if sw > iw {
			t.Errorf("width %d: the page scrolls horizontally (scrollWidth %d > innerWidth %d)", width, sw, iw)
		}
	}
}
