-- A context file's graph items as its extraction finds them, a batch of parts at a time, before they are committed
-- with its status: a long file's graph is found in slices of time, each going on after the last batch drafted.
-- `analysed` and `item_total` count through the batch (the file's limits apply to the whole); a row past every
-- part (`through_part` 2147483647) marks the graph found. Removed when the file completes, fails or is deleted.
CREATE TABLE file_graph_drafts (
  file_id       text NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  through_part  integer NOT NULL,
  analysed      bigint NOT NULL,
  item_total    integer NOT NULL,
  items         jsonb NOT NULL,
  PRIMARY KEY (file_id, through_part)
);
