/** A problem document without its request id (which names one request), to compare two answers. */
export function withoutRequestId(body: Record<string, unknown>): Record<string, unknown> {
  const { requestId: _requestId, ...rest } = body;
  return rest;
}
