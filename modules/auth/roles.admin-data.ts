import type { ModuleRegistry as Registry, TenantRef } from '../../framework/entity/define.ts';
import type { FieldError } from '../../framework/errors.ts';

/** The wildcard: every permission, present and future. */
export const WILDCARD = '*';

/** One checkbox of the role form. */
export interface PermissionChoice {
  name: string;
  /** The checkbox's element id. */
  id: string;
  description: string;
  /** The module that defines it ('' for the wildcard). */
  module: string;
  operator: boolean;
  checked: boolean;
  /**
   * An operator permission in a customer tenant: no customer role may hold it, so the box is shown
   * for completeness but cannot be ticked (the rule itself stays with the roles operation).
   */
  disabled: boolean;
  /** The refusal of this permission in the last post, shown beside its box. */
  error?: string;
}

/**
 * One checkbox per permission the modules define, grouped by module in declaration order, after
 * the wildcard; ticked where the role holds it.
 */
export function permissionChoices(
  registry: Registry,
  tenant: TenantRef,
  held: readonly string[],
  errors: readonly FieldError[] = [],
): PermissionChoice[] {
  const holds = new Set(held);
  const errorOf = new Map<string, string>();
  for (const e of errors) {
    const index = /^\/body\/permissions\/(\d+)$/.exec(e.pointer);
    if (index) errorOf.set(held[Number(index[1])] ?? '', e.message);
  }
  const choice = (name: string, description: string, module: string, operator: boolean): PermissionChoice => ({
    name,
    id: `perm-${name === WILDCARD ? 'all' : name.replace(/[^A-Za-z0-9_-]/g, '-')}`,
    description,
    module,
    operator,
    checked: holds.has(name),
    disabled: operator && !tenant.isOperator,
    ...(errorOf.has(name) ? { error: errorOf.get(name)! } : {}),
  });
  return [
    choice(WILDCARD, 'Every permission, including those added later', '', false),
    ...[...registry.permissions.values()].map((p) =>
      choice(p.name, p.description ?? '', p.module, p.operator === true),
    ),
  ];
}

/**
 * The permission list a posted role form carries: the ticked boxes, sent as repeated
 * `permissions` fields (none ticked sends none: the role then holds nothing).
 */
export function postedPermissions(body: unknown): string[] {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>).permissions : undefined;
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}
