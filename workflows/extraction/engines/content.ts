/** The engines' results: the types live with the records that store them. */
export type { Box, PageText, Table, TableCell, TranscriptSegment } from '../../../records/content-types.js';
