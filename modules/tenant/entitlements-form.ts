import { problem, type FieldError } from '../../framework/errors.ts';
import type { FeatureDeclaration, LimitDeclaration } from '../../framework/contracts/entitlements.ts';

/** The declared features and limits the form offers (the registry's). */
interface Declared {
  readonly features: ReadonlyMap<string, FeatureDeclaration>;
  readonly limits: ReadonlyMap<string, LimitDeclaration>;
}

/** The override as stored (tenants.entitlements) or as a PUT takes it. */
interface Override {
  features?: string[] | null;
  limits?: Record<string, number | null>;
}

/**
 * The override form's values, as a person sees them: whether the plan's features stand or only
 * the ticked ones, and per limit the number typed (empty: the plan's) and whether it is lifted.
 */
export interface OverrideValues {
  featuresFrom: 'plan' | 'these';
  features: string[];
  limits: Record<string, { value: string; unbounded: boolean }>;
}

/** The form's values from the stored override (none: the plan's features, every limit the plan's). */
export function storedOverride(stored: Override | null): OverrideValues {
  const limits: OverrideValues['limits'] = {};
  for (const [name, value] of Object.entries(stored?.limits ?? {}))
    limits[name] = value === null ? { value: '', unbounded: true } : { value: String(value), unbounded: false };
  return {
    featuresFrom: stored?.features ? 'these' : 'plan',
    features: stored?.features ?? [],
    limits,
  };
}

const texts = (value: unknown): string[] =>
  (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string').map((v) => v.trim());

/**
 * The form's values as posted: `featuresFrom` (plan or these), the ticked `features`, and per
 * limit `limit:<name>` (the number) and `unbounded:<name>` (a checkbox with its hidden twin).
 */
export function postedOverride(body: Record<string, unknown>): OverrideValues {
  const limits: OverrideValues['limits'] = {};
  for (const [key, value] of Object.entries(body)) {
    if (key.startsWith('limit:')) {
      const name = key.slice('limit:'.length);
      limits[name] = { value: texts(value).at(-1) ?? '', unbounded: limits[name]?.unbounded ?? false };
    } else if (key.startsWith('unbounded:')) {
      const name = key.slice('unbounded:'.length);
      limits[name] = { value: limits[name]?.value ?? '', unbounded: texts(value).at(-1) === 'true' };
    }
  }
  return {
    featuresFrom: texts(body.featuresFrom).at(-1) === 'these' ? 'these' : 'plan',
    features: texts(body.features).filter((f) => f !== ''),
    limits,
  };
}

const WHOLE = /^\d{1,15}$/;

/**
 * The PUT body the form's values make: the ticked features when they replace the plan's, each
 * lifted limit null, each typed one its number; a limit left empty keeps the plan's. A number
 * that is not a whole number of units is refused beside its limit, in words (422, the limit's pointer).
 */
export function overrideBody(declared: Declared, values: OverrideValues): Override {
  const errors: FieldError[] = [];
  const limits: Record<string, number | null> = {};
  for (const [name, limit] of Object.entries(values.limits)) {
    const unit = declared.limits.get(name)?.unit ?? 'units';
    if (limit.unbounded) limits[name] = null;
    else if (WHOLE.test(limit.value)) limits[name] = Number(limit.value);
    else if (limit.value !== '')
      errors.push({
        pointer: `/body/limits/${name}`,
        message: `Enter a whole number of ${unit}, like 5, or leave it empty to keep the plan’s.`,
      });
  }
  if (errors.length > 0) throw problem('VALIDATION_FAILED', errors.map((e) => e.message).join(' '), { errors });
  return {
    ...(values.featuresFrom === 'these' ? { features: values.features } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
}

/** What the template draws: the feature choices and one row per declared limit. */
export function entitlementsForm(declared: Declared, values: OverrideValues, limitErrors: Record<string, string>) {
  return {
    featuresFromPlan: values.featuresFrom === 'plan',
    features: [...declared.features.values()].map((f) => ({ value: f.name, label: f.description })),
    selected: values.features,
    limits: [...declared.limits.values()].map((limit, i) => ({
      name: limit.name,
      id: `override-limit-${i}`,
      label: limit.description,
      unit: limit.unit,
      value: values.limits[limit.name]?.value ?? '',
      unbounded: values.limits[limit.name]?.unbounded ?? false,
      error: limitErrors[limit.name],
    })),
  };
}
