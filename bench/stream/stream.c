/* Build: gcc -O3 -o stream bench/stream/stream.c   (add -fopenmp for threads)
 *
 * Reference STREAM-style kernel for isobench's `stream` workload: copy,
 * scale, add and triad over three arrays of doubles, each at least 4x the
 * last-level cache, best of NTIMES passes (the first pass is not counted,
 * as in STREAM), bytes counted as STREAM counts them, MB = 10^6 bytes.
 *
 * Usage: stream [elements-per-array] [passes]
 * Default elements: max(10,000,000, 4 * LLC bytes / 8), LLC read from
 * /sys/devices/system/cpu/cpu0/cache/index* /size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long llc_bytes(void)
{
	long best = 0;
	for (int i = 0; i < 16; i++) {
		char path[128], buf[64];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof buf, f)) {
			char *end;
			long v = strtol(buf, &end, 10);
			if (*end == 'K') v <<= 10;
			else if (*end == 'M') v <<= 20;
			else if (*end == 'G') v <<= 30;
			if (v > best) best = v;
		}
		fclose(f);
	}
	return best;
}

int main(int argc, char **argv)
{
	long n = 10000000;
	long want = 4 * llc_bytes() / (long)sizeof(double);
	if (want > n) n = want;
	if (argc > 1) n = atol(argv[1]);
	int passes = argc > 2 ? atoi(argv[2]) : 10;
	if (n < 1 || passes < 1) {
		fprintf(stderr, "usage: stream [elements-per-array] [passes]\n");
		return 2;
	}
	double *a = malloc(n * sizeof(double));
	double *b = malloc(n * sizeof(double));
	double *c = malloc(n * sizeof(double));
	if (!a || !b || !c) {
		fprintf(stderr, "cannot allocate 3 x %ld doubles\n", n);
		return 1;
	}
	const double s = 3.0;
	long j;
#pragma omp parallel for
	for (j = 0; j < n; j++) {
		a[j] = 1.0;
		b[j] = 2.0;
		c[j] = 0.0;
	}
	double best[4] = {1e30, 1e30, 1e30, 1e30};
	for (int k = 0; k < passes; k++) {
		double t[4];
		t[0] = now();
#pragma omp parallel for
		for (j = 0; j < n; j++)
			c[j] = a[j];
		t[0] = now() - t[0];
		t[1] = now();
#pragma omp parallel for
		for (j = 0; j < n; j++)
			b[j] = s * c[j];
		t[1] = now() - t[1];
		t[2] = now();
#pragma omp parallel for
		for (j = 0; j < n; j++)
			c[j] = a[j] + b[j];
		t[2] = now() - t[2];
		t[3] = now();
#pragma omp parallel for
		for (j = 0; j < n; j++)
			a[j] = b[j] + s * c[j];
		t[3] = now() - t[3];
		if (k == 0 && passes > 1)
			continue; /* STREAM ignores the first pass */
		for (int i = 0; i < 4; i++)
			if (t[i] < best[i]) best[i] = t[i];
	}
	/* Check the result the way STREAM does: replay the scalar recurrence. */
	double ea = 1.0, eb = 2.0, ec = 0.0;
	for (int k = 0; k < passes; k++) {
		ec = ea;
		eb = s * ec;
		ec = ea + eb;
		ea = eb + s * ec;
	}
	if (fabs(a[n / 2] - ea) > 1e-8 * ea || fabs(b[n - 1] - eb) > 1e-8 * eb || fabs(c[0] - ec) > 1e-8 * ec) {
		fprintf(stderr, "validation failed\n");
		return 1;
	}
	const char *names[4] = {"Copy", "Scale", "Add", "Triad"};
	const double bytes[4] = {2.0 * 8 * n, 2.0 * 8 * n, 3.0 * 8 * n, 3.0 * 8 * n};
	printf("Array size = %ld elements, %.1f MiB per array, %d passes\n", n, n * 8.0 / 1048576, passes);
	for (int i = 0; i < 4; i++)
		printf("%-6s %12.1f MB/s\n", names[i], bytes[i] / 1e6 / best[i]);
	free(a);
	free(b);
	free(c);
	return 0;
}
