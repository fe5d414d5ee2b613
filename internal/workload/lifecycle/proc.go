package lifecycle

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of /proc/PID/stat and /proc/stat times; Linux fixes
// USER_HZ at 100 on every architecture isobench runs on.
const userHZ = 100

// procCPU returns the CPU seconds (user+system) process pid has used.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// the command name may contain spaces and parentheses: fields start
	// after the last ')'
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return float64(ut+st) / userHZ, nil
}

// procMem returns the resident and proportional set sizes of pid in bytes.
func procMem(pid int) (rss, pss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "Rss", "Pss":
			fs := strings.Fields(v)
			if len(fs) == 0 {
				continue
			}
			n, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				continue
			}
			if k == "Rss" {
				rss = n << 10
			} else {
				pss = n << 10
			}
		}
	}
	return rss, pss, sc.Err()
}

// engineUsage sums CPU seconds and memory over the engine's processes;
// processes that have gone are skipped.
type engineUsage struct {
	cpu      float64
	rss, pss int64
}

func engine(pids []int) engineUsage {
	var u engineUsage
	for _, p := range pids {
		if c, err := procCPU(p); err == nil {
			u.cpu += c
		}
		if r, s, err := procMem(p); err == nil {
			u.rss += r
			u.pss += s
		}
	}
	return u
}

// hostBusy returns the CPU seconds all CPUs of the host spent not idle
// (everything but idle and iowait in /proc/stat).
func hostBusy() (float64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, fmt.Errorf("/proc/stat: empty")
	}
	fs := strings.Fields(sc.Text())
	if len(fs) < 6 || fs[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", sc.Text())
	}
	var busy int64
	for i, v := range fs[1:] {
		if i >= 8 { // guest times are already in user/nice
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return float64(busy) / userHZ, nil
}

// memAvailable is the host's MemAvailable in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fs := strings.Fields(v)
			if len(fs) > 0 {
				n, err := strconv.ParseInt(fs[0], 10, 64)
				if err == nil {
					return n << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
}
