/** The engines' results: the types live with the records that store them. */
export type { Box, PageText, Table, TableCell, TranscriptSegment } from '../../../records/content-types.js';

/**
 * The most pages a file may have: each is a row a reader lists and the graph reads, and a few bytes can make one
 * (a form feed in text, a page object in a PDF), so 100 MB of them was a hundred million rows and more memory
 * than the worker had.
 */
export const MAX_FILE_PAGES = 10_000;
