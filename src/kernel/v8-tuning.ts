import v8 from 'node:v8';

/**
 * Turns V8's allocation-site pretenuring off in a serving process. While the
 * server boots, nearly everything it builds (schemas, routes, compiled
 * operations) lives on, so V8 marks the allocation sites that built it to
 * allocate straight into the old generation from then on. Many of those sites
 * (in fastify, graphql, the ORM, our own helpers) also make each request's
 * short-lived objects, which then land in the old generation too: every
 * scavenge has their pointers into the young generation to scan, and the old
 * generation fills with garbage only a full collection frees. Measured on a
 * profile read: scavenges took 8 ms instead of 0.3, the collector 22% of the
 * process's time, and the server answered 35 to 80% more reads per second
 * with the flag off (bench/README.md). Correctness does not depend on it.
 *
 * Run before the server builds anything. An operator who starts node with
 * `--allocation-site-pretenuring` keeps V8's default.
 */
export function tuneHeapForServing(execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.includes('--allocation-site-pretenuring')) return;
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
