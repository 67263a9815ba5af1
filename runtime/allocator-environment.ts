/**
 * The environment the service is meant to run under for glibc's allocator
 * (malloc), which reads these variables once, when the process starts, so
 * the daemon cannot set them for itself: the shipped systemd unit
 * (packaging/mailcairn.service), `npm start` and the benches give them
 * (the benches from here; test/packaging/mailcairn-service.test.ts keeps
 * the unit's and `npm start`'s equal to these).
 * Other C libraries ignore them. docs/operations.md, "Memory and glibc's
 * allocator", says what each does; docs/performance.md has the runs (MA54).
 *
 * - `MALLOC_MMAP_THRESHOLD_`: a block of 128 KiB or more is its own mapping,
 *   returned to the system when freed. glibc's default threshold rises to
 *   the size of the largest mapped block freed, so once raw mail (batches of
 *   up to 4 MiB, messages of up to 5 MB) has passed through, such blocks come
 *   from the threads' heaps, and what they leave there is not given back.
 * - `MALLOC_ARENA_MAX`: two malloc heaps shared by every thread instead of up
 *   to eight per core, each holding what its threads freed.
 *
 * Measured on two cores: 100 accounts × 500 messages peaked at 643–673 MiB
 * against 865 with glibc's defaults; one account's first mirror of 10,000
 * realistic messages at 300–307 MiB against 345–351, for about 0.9 s more
 * system CPU in 22–25 CPU-s.
 */
export const ALLOCATOR_ENVIRONMENT: Readonly<Record<'MALLOC_ARENA_MAX' | 'MALLOC_MMAP_THRESHOLD_', string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
};
