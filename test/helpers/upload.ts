// A file sent as multipart/form-data with an API key, as a browser or an SDK would.
export async function uploadFile(
  url: string,
  apiKey: string,
  file: Uint8Array,
  options: { method?: string; field?: string; type?: string; name?: string } = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append(options.field ?? 'file', new Blob([file as BlobPart], { type: options.type }), options.name);
  const response = await fetch(url, {
    method: options.method ?? 'POST',
    body: form,
    headers: { 'x-api-key': apiKey },
  });
  return { status: response.status, body: (await response.json()) as any };
}
