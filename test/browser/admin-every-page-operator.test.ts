import { warnNoChromium } from './admin-pages-setup.ts';
import { everyPageOnAPhone } from './every-page.ts';

// Every admin page as the operator's administrator on a 390-px phone (every-page.ts; the
// customer's walk is admin-every-page.test.ts, on another worker).

warnNoChromium('test/browser/admin-every-page-operator.test.ts');

everyPageOnAPhone('operator');
