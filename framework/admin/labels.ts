import type { ResolvedEntity } from '../entity/resolve.ts';

/** What people read for an entity in the shell: one row, and several. */
export interface PeopleLabels {
  /** "Task", "Page or post". */
  label: string;
  /** "Tasks", "Pages and posts". */
  labelPlural: string;
}

/**
 * An entity's names for people, from its declaration: `admin.label` and `admin.labelPlural` where
 * it declares them (the API's label may read badly to them: content's "Content", whose plural was
 * "Contents"), else its `label` and the plural the entity's names give. Every page, heading,
 * button, card and sentence of the shell names an entity through this, never through its path.
 */
export function peopleLabels(entity: ResolvedEntity): PeopleLabels {
  const declared = entity.def.admin;
  const label = declared?.label ?? entity.names.label;
  const labelPlural = declared?.labelPlural ?? (declared?.label ? `${declared.label}s` : entity.names.labelPlural);
  return { label, labelPlural };
}
