import Type, { type TSchema } from 'typebox';
import { StringEnum } from '../entity/string-enum.ts';
import { named } from '../openapi/schema-name.ts';
import { pageQuerySchema, pageSchema } from '../operations/page-query.ts';
import { ACTOR_KINDS } from '../context/actor.ts';

/** The schemas of the history, restore and activity routes: one each, shared by every entity. */

export const ActorSchema = named(
  Type.Object(
    {
      kind: StringEnum(ACTOR_KINDS, {
        description:
          'user: a person with a session; token: a person with a personal access token (name: the token’s name); job: a scheduled job (name: the job’s); subscription: the service acting on an event (name: the subscription’s; userId: the person whose action caused it, if any); operator: the installation’s operator acting on this tenant (no person named); system: none of these.',
      }),
      userId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
        description: 'The person who acted (a user of this tenant), or null.',
      }),
      name: Type.Union([Type.String(), Type.Null()], {
        description: 'The token’s, job’s or subscription’s name, as kind says; else null.',
      }),
    },
    { additionalProperties: false, description: 'Who acted.' },
  ),
  'Actor',
);

/**
 * The actor's fields a list of revisions or events filters by, named by their path in the answer:
 * `actor.userId=eq.<id>`, `actor.kind=in.(token,job)`, `actor.name=eq.nightly-report`.
 */
export const ACTOR_FILTERS: Readonly<Record<string, TSchema>> = {
  'actor.kind': StringEnum(ACTOR_KINDS),
  'actor.userId': Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
  'actor.name': Type.Union([Type.String(), Type.Null()]),
};

export const RevisionSchema = named(
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'The revision’s id: what a restore names.' }),
      at: Type.String({ format: 'date-time', description: 'When the write happened (its transaction’s time).' }),
      actor: ActorSchema,
      operation: Type.String({
        description: 'create, update, delete, restore, or the name of the command that made the change.',
      }),
      changes: Type.Array(
        Type.Object(
          {
            field: Type.String({ description: 'The field, as the read route names it.' }),
            old: Type.Unknown({ description: 'Its value before (null for a create), as the read route shows it.' }),
            new: Type.Unknown({ description: 'Its value after, as the read route shows it.' }),
          },
          { additionalProperties: false },
        ),
        {
          description:
            'Each changed field with its old and new value, in the entity’s field order; a create lists every field it set. Only fields the read route shows: a field declared unrecorded or secret never appears. Empty for a delete.',
        },
      ),
    },
    { additionalProperties: false, description: 'One write of a record, as history keeps it.' },
  ),
  'Revision',
);

export const RevisionPage = pageSchema(RevisionSchema);

/** The admin shell's history page's paging (the API's history route takes the query language: RecordHistory.list). */
export const HistoryQuery: TSchema = pageQuerySchema({
  sorts: ['at'],
  defaultSort: '-at',
  sortDescription: '-at (the default): newest first; at: oldest first. Ties cannot happen: a revision’s id orders it.',
});

export const RestoreBody = named(
  Type.Object(
    {
      revision: Type.String({
        format: 'uuid',
        description:
          'The id of one of the record’s revisions (GET .../{id}/history): its fields come back as they were right after it.',
      }),
    },
    { additionalProperties: false },
  ),
  'Restore',
);

/** A restore's answer for an entity whose row schema is `row`. */
export function restoredSchema(row: TSchema, name: string): TSchema {
  return named(
    Type.Object(
      {
        row: row,
        restored: Type.Array(Type.String(), {
          description: 'The fields the restore set back (empty when it changed nothing).',
        }),
        kept: Type.Array(
          Type.Object(
            {
              field: Type.String(),
              reason: StringEnum(['command-owned', 'immutable', 'read-only', 'state'], {
                description:
                  'command-owned: only its command writes it; immutable: set on create only; read-only: only the service sets it; state: the entity’s state field, which moves only as its declared moves allow (a restore never walks it back).',
              }),
            },
            { additionalProperties: false },
          ),
          {
            description:
              'The fields that held another value right after the revision but were left as they are, and why.',
          },
        ),
      },
      { additionalProperties: false },
    ),
    name,
  );
}
