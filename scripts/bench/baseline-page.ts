/** The bare baseline's public page ETag: a constant, so its 304 costs no lookup at all. */
export const BASELINE_PAGE_ETAG = 'W/"bench"';
