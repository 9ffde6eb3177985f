/**
 * Every bucket of an analytics report: its pages followed by `next_page`. A page the API finds too large
 * (400 `report_too_large`: many groups in many buckets) is asked again with half as many buckets.
 */
import { ApiError } from '../api';

interface ReportPage<B> {
  data: B[];
  next_page: string | null;
}

export async function allBuckets<B>(
  read: (page: string | undefined, limit: number) => Promise<ReportPage<B>>,
  limit: number,
): Promise<B[]> {
  const buckets: B[] = [];
  let page: string | undefined;
  for (;;) {
    let answer: ReportPage<B>;
    try {
      answer = await read(page, limit);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'report_too_large' && limit > 1) {
        limit = Math.max(1, Math.floor(limit / 2));
        continue;
      }
      throw error;
    }
    buckets.push(...answer.data);
    if (!answer.next_page) return buckets;
    page = answer.next_page;
  }
}
