// spinr: the machine's own conservation, without isobench. THREADS
// threads run sysbench cpu's event (primes up to 10,000), each counting
// eighths of an event as it does them (the same parts, of about equal
// cost, that isobench's cpu workload counts: internal/workload/cpu
// PartBounds) into its own slot of a shared file, and all wait for one
// byte on stdin (the release) before starting. spinr.py releases 1 and 32
// of them together and reads their counts from outside.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <math.h>

#define PARTS 8
#define MAX_PRIME 10000

static volatile uint64_t *slots;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static void *work(void *a) {
  volatile uint64_t *s = slots + 8 * (intptr_t)a; // a cache line each
  unsigned long b[PARTS + 1];
  b[0] = 3;
  b[PARTS] = MAX_PRIME;
  for (int k = 1; k < PARTS; k++)
    b[k] = (unsigned long)(MAX_PRIME * pow((double)k / PARTS, 2.0 / 3));
  pthread_mutex_lock(&mu);
  while (!go)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  for (;;) {
    unsigned long c, l, n = 0;
    for (int k = 0; k < PARTS; k++) {
      for (c = b[k]; c < b[k + 1]; c++) {
        unsigned long t = (unsigned long)sqrt((double)c);
        for (l = 2; l <= t; l++)
          if (c % l == 0)
            break;
        if (l > t)
          n++;
      }
      __atomic_add_fetch(s, 1, __ATOMIC_RELAXED);
    }
    if (n == 0)
      abort(); // keeps the loop
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: spinr THREADS COUNTFILE < release\n");
    return 2;
  }
  int t = atoi(argv[1]);
  int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, 64 * t) != 0)
    return 1;
  slots = mmap(0, 64 * t, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (slots == MAP_FAILED)
    return 1;
  pthread_t th;
  for (intptr_t i = 0; i < t; i++)
    pthread_create(&th, 0, work, (void *)i);
  char c;
  if (read(0, &c, 1) != 1)
    return 1;
  pthread_mutex_lock(&mu);
  go = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pause();
  return 0;
}
