import { defineModule } from '../../framework/entity/define.ts';

/** Per-person messages. Written through notify(); reading and marking read come with their routes. */
export const notificationModule = defineModule({
  name: 'notification',
  description: 'Per-person messages, optionally mailed',
  events: ['notification.created'],
});
