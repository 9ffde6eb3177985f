/**
 * A plain JSON request to the Kubernetes API with the kubeconfig's credentials, for the one object whose
 * typed client cannot write it: a Lease's times are MicroTime (six fractional digits), which the generated
 * serializer writes as a JavaScript date (three) and the API server refuses.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeResponse<T> {
  status: number;
  body: T;
}

const TIMEOUT_MS = 10_000;

export async function kubeRequest<T>(
  kc: KubeConfig,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
): Promise<KubeResponse<T>> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const url = new URL(path, cluster.server);
  const options: RequestOptions = {
    method,
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    timeout: TIMEOUT_MS,
  };
  await kc.applyToHTTPSOptions(options);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as T });
        } catch {
          reject(new Error(`${method} ${path}: the API server answered ${res.statusCode} with something other than JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** A time as Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
