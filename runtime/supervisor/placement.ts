/**
 * Which host thread an actor runs on. Shared groups fill the least loaded
 * thread below `actorsPerThread` before starting another, so one account
 * costs one thread and five hundred cost ceil(500 / actorsPerThread).
 * Dedicated actors always get a fresh thread. An emptied shared thread is
 * kept for the next restart; threads end when they die or at shutdown.
 */
import type { HostThread } from '../host/host-thread.ts';
import type { ChildSpec, ResourceLimits } from './child-spec.ts';

export type SpawnHost = (group: string, capacity: number, resourceLimits: ResourceLimits | undefined) => HostThread;

export class PlacementTable {
  private readonly hosts = new Set<HostThread>();
  private readonly spawn: SpawnHost;

  constructor(spawn: SpawnHost) {
    this.spawn = spawn;
  }

  hostFor(spec: ChildSpec): HostThread {
    const placement = spec.placement;
    if (placement.kind === 'dedicated') return this.add(this.spawn(`dedicated:${spec.id}`, 1, placement.resourceLimits));
    let best: HostThread | null = null;
    for (const host of this.hosts) {
      if (!host.alive || host.group !== placement.group || host.actors.size >= host.capacity) continue;
      if (best === null || host.actors.size < best.actors.size) best = host;
    }
    return best ?? this.add(this.spawn(placement.group, placement.actorsPerThread, placement.resourceLimits));
  }

  remove(host: HostThread): void {
    this.hosts.delete(host);
  }

  all(): HostThread[] {
    return [...this.hosts];
  }

  private add(host: HostThread): HostThread {
    this.hosts.add(host);
    return host;
  }
}
