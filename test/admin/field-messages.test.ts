import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { asSentence, fieldMessage } from '../../framework/admin/field-messages.ts';
import { contentFieldText, contentFields } from '../../modules/content/content.fields.ts';
import { taskFieldText, taskFields } from '../../modules/task/task.fields.ts';

// The admin phrases a refused value from the schema rule it breaks (issue 35, point 1), never
// with the validator's words, which the service message argument stands for here.
const VALIDATOR = 'must NOT have fewer than 1 characters';

describe('a refused field, phrased per rule for people', () => {
  it('says the length a title takes, that a line break is not one line, and that a required field is empty', () => {
    const title = taskFields.title;
    const messages = taskFieldText.title.messages;
    expect(fieldMessage(title, 'x'.repeat(201), true, messages, VALIDATOR)).toBe('Use 1 to 200 characters.');
    expect(fieldMessage(title, '', true, messages, VALIDATOR)).toBe('Fill in this field.');
    expect(fieldMessage(title, 'two\nlines', true, messages, 'must match pattern "^[^\\r\\n]*$"')).toBe(
      'Keep the title on one line.',
    );
    // Sent nothing, refused by the service: it was required there.
    expect(fieldMessage(title, undefined, false, messages, 'is required')).toBe('Fill in this field.');
  });

  it('gives a pattern its own sentence (the slug), and a reference what to choose', () => {
    expect(
      fieldMessage(
        contentFields.slug,
        'Not A Slug!',
        true,
        contentFieldText.slug.messages,
        'must match pattern "^[a-z0-9]+(-[a-z0-9]+)*$"',
      ),
    ).toBe('Use lowercase letters, digits and single hyphens, like about-us.');
    expect(
      fieldMessage(
        taskFields.assigneeId,
        'someone',
        true,
        taskFieldText.assigneeId.messages,
        'must match format "uuid"',
      ),
    ).toBe('Choose a person.');
    expect(
      fieldMessage(Type.String({ pattern: '^[a-z]+$' }), 'A', true, undefined, 'must match pattern "^[a-z]+$"'),
    ).toBe('Use the form described under the field.');
  });

  it('says what to choose, type or enter for options, numbers, addresses and times', () => {
    expect(
      fieldMessage(taskFields.priority, 'urgent', true, undefined, 'must be equal to one of the allowed values'),
    ).toBe('Choose one of the options.');
    expect(fieldMessage(Type.Integer({ minimum: 0, maximum: 168 }), 200, true, undefined, 'must be <= 168')).toBe(
      'Enter a whole number from 0 to 168.',
    );
    expect(fieldMessage(Type.Integer({ minimum: 0 }), 'twelve', true, undefined, 'must be integer')).toBe(
      'Enter a whole number.',
    );
    expect(fieldMessage(Type.String({ format: 'email' }), 'nobody', true, undefined, 'must match format "email"')).toBe(
      'Enter an email address, like name@example.com.',
    );
    expect(fieldMessage(taskFields.deadline, 'soon', true, undefined, 'must match format "date-time"')).toBe(
      'Enter a date and a time.',
    );
    expect(
      fieldMessage(
        Type.Array(Type.String({ maxLength: 3 }), { maxItems: 2 }),
        ['a', 'b', 'c'],
        true,
        undefined,
        'must NOT have more than 2 items',
      ),
    ).toBe('Give at most 2 values.');
  });

  it('passes on a business rule’s own message only when it reads as a sentence', () => {
    // The schema takes the value: the refusal is the service's.
    expect(fieldMessage(Type.String(), 'XYZ', true, undefined, 'not a currency in use')).toBe('Not a currency in use.');
    expect(fieldMessage(Type.String(), 'x', true, undefined, 'assigneeId: no such user')).toBe(
      'This value is not accepted.',
    );
    expect(asSentence('a task cannot move from open to in_progress')).toBe(
      'A task cannot move from open to in progress.',
    );
    for (const coded of [
      '409 INVALID_TRANSITION',
      'only POST .../{id}/resolve moves it',
      'must match pattern "^a$"',
      'see /body/title',
    ])
      expect(asSentence(coded), coded).toBeUndefined();
  });
});
