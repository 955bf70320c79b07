import { describe, expect, it } from 'vitest';
import { ROW_SERIALIZERS_KEPT, RowSerializers } from '../../../framework/live/row-serializers.ts';

describe("the streams' row serializers", () => {
  it('are shared by the streams of one list that name the same fields', () => {
    const serializers = new RowSerializers();
    let made = 0;
    const make = () => {
      made++;
      return (row: unknown) => JSON.stringify(row);
    };
    const first = serializers.of('task-tasks', 'title,status', make);
    expect(serializers.of('task-tasks', 'title,status', make)).toBe(first);
    expect(serializers.of('task-tasks', 'status,title', make)).not.toBe(first);
    expect(serializers.of('content-contents', 'title,status', make)).not.toBe(first);
    expect(made).toBe(3);
  });

  it('are kept up to a bound, whatever the number of spellings of fields= callers send', () => {
    const serializers = new RowSerializers();
    // A hostile caller repeats a name once more each time: every spelling is new.
    for (let n = 1; n <= ROW_SERIALIZERS_KEPT * 4; n++)
      serializers.of('task-tasks', Array.from({ length: n }, () => 'title').join(','), () => () => '{}');
    expect(serializers.size).toBe(ROW_SERIALIZERS_KEPT);
    // The most recently used stay: a busy shape is not pushed out by a stream of new spellings.
    const busy = serializers.of('task-tasks', 'title,status', () => () => '{"busy":true}');
    for (let n = 0; n < ROW_SERIALIZERS_KEPT - 1; n++) {
      serializers.of('task-tasks', `title${'x'.repeat(n)}`, () => () => '{}');
      expect(serializers.of('task-tasks', 'title,status', () => () => '{}')).toBe(busy);
    }
  });
});
