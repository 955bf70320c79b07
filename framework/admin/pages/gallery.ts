import { renderTemplate } from '../render.ts';
import { registerAdminPage, type AdminSite } from '../page.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { GALLERY } from './gallery-data.ts';

/** GET /admin/_gallery (signed in): every UI component of templates/admin/components/ once, with sample data. */
export function registerGallery(site: AdminSite): void {
  registerAdminPage(site, {
    path: '/admin/_gallery',
    access: 'signedIn',
    summary: 'Component gallery',
    handler: async (page) => {
      const token = { csrf: page.csrf(), csrfField: FORM_TOKEN_FIELD };
      const samples = GALLERY.map((sample) => ({
        component: sample.component,
        about: sample.about,
        html: (sample.wrap ?? ((html: string) => html))(
          renderTemplate(`./admin/components/${sample.component}`, sample.data(token)),
        ),
      }));
      return page.render({ title: 'Components', body: renderTemplate('./admin/pages/gallery', { samples }) });
    },
  });
}
