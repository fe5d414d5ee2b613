"""The machine's own 32-to-1 ratio from a common release, without isobench.

usage: spinr.py SPINR_BINARY SECONDS  ->  prints 32 processes' summed
events/s over SECONDS from their release / 1 process's (8 threads each),
the two read one after the other, or "-" when a read failed.
"""
import os, struct, subprocess, sys, tempfile, time

PARTS = 8  # spinr.c counts eighths of an event


def rate(binary, n, threads, seconds):
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        ps = [subprocess.Popen([binary, str(threads), f"{d}/{i}"], stdin=subprocess.PIPE) for i in range(n)]
        try:
            time.sleep(1.0)  # every thread waiting for the release
            t0 = time.monotonic()
            for p in ps:
                p.stdin.write(b"g")
                p.stdin.flush()
            time.sleep(max(0.0, t0 + seconds - time.monotonic()))
            total, t1 = 0, time.monotonic()
            for i in range(n):
                b = open(f"{d}/{i}", "rb").read()
                total += sum(struct.unpack_from("<Q", b, 64 * k)[0] for k in range(threads))
            return total / PARTS / (t1 - t0)
        finally:
            for p in ps:
                p.kill()
            for p in ps:
                p.wait()


if __name__ == "__main__":
    binary, seconds = sys.argv[1], float(sys.argv[2])
    try:
        one = rate(binary, 1, 8, seconds)
        many = rate(binary, 32, 8, seconds)
        print(f"{many / one:.4f}" if one > 0 else "-")
    except (OSError, ValueError):
        print("-")
