import type { JobWithMetadata, PgBoss } from 'pg-boss';

/**
 * A module queue's job group as the framework names it: the tenant that queued the job, then the
 * module's own group (e.g. a receiving endpoint). The fair worker reads the tenant back from it.
 */
export const fairGroup = (tenantId: string, group: string): string => `${tenantId}/${group}`;

/** The tenant of a job's group (a group named before groups carried it counts as its own tenant). */
export const tenantOfGroup = (group: string): string => {
  const slash = group.indexOf('/');
  return slash < 0 ? group : group.slice(0, slash);
};

export interface FairQueueOptions {
  /** The pg-boss queue. */
  queue: string;
  /** Jobs at once in this process. */
  concurrency: number;
  /** Jobs of one group at once in this process. */
  groupConcurrency: number;
  /** Jobs of one tenant at once in this process: below concurrency, so other tenants always find a slot. */
  tenantConcurrency: number;
  /** How long an idle worker waits before it looks again (a finished job wakes it at once). */
  pollMs: number;
  /** Runs one job; a throw fails the attempt (pg-boss retries it, or dead-letters the last). */
  work(job: JobWithMetadata<Record<string, unknown>>): Promise<void>;
  /** A failure of the worker itself (a fetch or a settle that did not go through). */
  onError(err: unknown): void;
}

type Job = JobWithMetadata<Record<string, unknown>>;

/**
 * Works one queue fair across tenants, in this process. pg-boss hands out jobs oldest first, so
 * with a plain worker one tenant's burst (a thousand deliveries queued in a second) holds every
 * slot until it is through, and another tenant's single job waits behind all of it. Here each free
 * slot is claimed (pg-boss `fetch` with `ignoreGroups`, one job at a time) by these rules:
 * 1. first for a tenant with nothing running: the groups of every busy tenant are ignored, so the
 *    oldest job of any other tenant comes first (round-robin between tenants with work waiting);
 * 2. else the oldest job of a tenant under its cap (tenantConcurrency), whose group is under its
 *    own (groupConcurrency): a tenant alone may use all but a few slots, and those few stay free
 *    for the next tenant's job.
 * The groups a tenant's jobs carry are learnt from the jobs claimed (a group names its tenant,
 * fairGroup), so a tenant's group not seen yet may be claimed once beyond its cap. Jobs are
 * settled with pg-boss `complete` and `fail`, which retries them with the queue's back-off and
 * dead-letters the last attempt, as its own workers do.
 */
export class FairQueueWorker {
  private readonly boss: PgBoss;
  private readonly options: FairQueueOptions;
  private readonly running = new Map<string, { group: string; tenant: string; done: Promise<void> }>();
  private readonly perGroup = new Map<string, number>();
  private readonly perTenant = new Map<string, number>();
  /** The groups seen of each tenant with a job running: what ignoring that tenant means. */
  private readonly groupsOf = new Map<string, Set<string>>();
  /** Until when rule 1 is not asked again, after it found nothing. */
  private othersIdleUntil = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;

  constructor(boss: PgBoss, options: FairQueueOptions) {
    this.boss = boss;
    this.options = options;
  }

  start(): void {
    this.loop ??= this.claimLoop();
  }

  /** Claims nothing more, and waits for the running jobs to settle (up to timeoutMs). */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.wakeUp?.();
    await this.loop;
    const settled = Promise.allSettled([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopping) {
      if (this.running.size >= this.options.concurrency) {
        await this.pause(this.options.pollMs);
        continue;
      }
      let job: Job | undefined;
      try {
        job = await this.claim();
      } catch (err) {
        this.options.onError(err);
      }
      if (job) this.begin(job);
      else await this.pause(this.options.pollMs);
    }
  }

  /** Waits ms, or less when a running job settles or the worker stops. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async claim(): Promise<Job | undefined> {
    const { groupConcurrency, tenantConcurrency, pollMs } = this.options;
    const fullGroups = [...this.perGroup].filter(([, n]) => n >= groupConcurrency).map(([g]) => g);
    const groupsOf = (tenants: string[]) => tenants.flatMap((t) => [...(this.groupsOf.get(t) ?? [])]);
    const busy = [...this.perTenant.keys()];
    const capped = [...this.perTenant].filter(([, n]) => n >= tenantConcurrency).map(([t]) => t);
    // Rule 1 asks for what rule 2 would not already ignore: some busy tenant is under its cap.
    if (busy.length > capped.length && performance.now() >= this.othersIdleUntil) {
      const job = await this.fetch([...fullGroups, ...groupsOf(busy)]);
      if (job) return job;
      this.othersIdleUntil = performance.now() + pollMs;
    }
    return this.fetch([...fullGroups, ...groupsOf(capped)]);
  }

  private async fetch(ignoreGroups: string[]): Promise<Job | undefined> {
    const [job] = await this.boss.fetch<Record<string, unknown>>(this.options.queue, {
      batchSize: 1,
      includeMetadata: true,
      ...(ignoreGroups.length > 0 ? { ignoreGroups: [...new Set(ignoreGroups)] } : {}),
    });
    return job;
  }

  private begin(job: Job): void {
    const group = job.groupId ?? job.id;
    const tenant = tenantOfGroup(group);
    this.perGroup.set(group, (this.perGroup.get(group) ?? 0) + 1);
    this.perTenant.set(tenant, (this.perTenant.get(tenant) ?? 0) + 1);
    const groups = this.groupsOf.get(tenant) ?? new Set<string>();
    groups.add(group);
    this.groupsOf.set(tenant, groups);
    const done = this.settle(job).finally(() => this.end(job.id, group, tenant));
    this.running.set(job.id, { group, tenant, done });
  }

  private async settle(job: Job): Promise<void> {
    const attempt = { id: job.id, retryCount: job.retryCount };
    let failure: Error | undefined;
    try {
      await this.options.work(job);
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
    }
    try {
      if (failure) await this.boss.fail(this.options.queue, attempt, { message: failure.message });
      else await this.boss.complete(this.options.queue, attempt);
    } catch (err) {
      this.options.onError(err);
    }
  }

  private end(id: string, group: string, tenant: string): void {
    this.running.delete(id);
    const inGroup = (this.perGroup.get(group) ?? 1) - 1;
    if (inGroup > 0) this.perGroup.set(group, inGroup);
    else this.perGroup.delete(group);
    const ofTenant = (this.perTenant.get(tenant) ?? 1) - 1;
    if (ofTenant > 0) this.perTenant.set(tenant, ofTenant);
    else {
      // A tenant with nothing running is ignored by no claim: its groups need not be kept.
      this.perTenant.delete(tenant);
      this.groupsOf.delete(tenant);
    }
    this.wakeUp?.();
  }
}
