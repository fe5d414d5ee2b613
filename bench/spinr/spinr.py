"""The machine's own 32-to-1 ratio from a common release, without isobench.

usage: spinr.py BINARY SECONDS [DOCKER_IMAGE]  ->  prints 32 processes'
summed events/s over SECONDS from their release / 1 process's (8 threads
each), the two read one after the other, or "-" when a read failed.

BINARY is bench/spinr (C) or bench/spinr/spingo (Go, built static). With
DOCKER_IMAGE each process runs in a container of its own (docker run -i,
no network, the binary and the count directory bind-mounted), as
isobench's docker instances do: the platform's own ratio for the same
program. Its containers carry the label isobench.truth, which isobench's
start-of-run sweep does not own, and are removed on the way out.
"""
import os, struct, subprocess, sys, tempfile, time

PARTS = 8  # spinr counts eighths of an event
LABEL = f"isobench.truth={os.getpid()}"


def rate(binary, n, threads, seconds, image=None):
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        if image:
            cmd = lambda i: ["docker", "run", "--rm", "-i", "--label", LABEL, "--network", "none",
                             "-v", f"{d}:/counts", "-v", f"{os.path.abspath(binary)}:/spin:ro",
                             image, "/spin", str(threads), f"/counts/{i}"]
        else:
            cmd = lambda i: [binary, str(threads), f"{d}/{i}"]
        ps = [subprocess.Popen(cmd(i), stdin=subprocess.PIPE) for i in range(n)]
        try:
            # every process has made its count file (a container takes
            # a while to start), then a second for every thread to wait
            limit = time.monotonic() + 120
            while sum(os.path.exists(f"{d}/{i}") for i in range(n)) < n:
                if time.monotonic() > limit or any(p.poll() is not None for p in ps):
                    raise OSError("a counting process did not start")
                time.sleep(0.05)
            time.sleep(1.0)
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
            if image:
                ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}"],
                                     capture_output=True, text=True).stdout.split()
                if ids:
                    subprocess.run(["docker", "rm", "-f"] + ids, capture_output=True)
            for p in ps:
                p.kill()
            for p in ps:
                p.wait()


if __name__ == "__main__":
    binary, seconds = sys.argv[1], float(sys.argv[2])
    image = sys.argv[3] if len(sys.argv) > 3 else None
    try:
        one = rate(binary, 1, 8, seconds, image)
        many = rate(binary, 32, 8, seconds, image)
        print(f"{many / one:.4f}" if one > 0 else "-")
    except (OSError, ValueError):
        print("-")
