import type { ResolvedEntity } from '../contracts/entity.ts';

/**
 * Whether an entity's generated list can be followed live (framework/live): a collection of a
 * tenant's rows. A singleton has no list; a global entity's rows change in the operator tenant's
 * transactions, which no other tenant's stream can follow (its positions are the tenant's own).
 */
export const followsEntity = (entity: ResolvedEntity): boolean => !entity.singleton && entity.scope !== 'global';
