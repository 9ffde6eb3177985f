-- The copy of an image file that vision models are sent, made when the file is extracted: within the providers'
-- bounds for one image (2,000 pixels on the long side, 3.5 MB), so a model call never reads the upload itself.
-- Removed with the file, or with the rest of its extracted content when its extraction fails.
CREATE TABLE file_vision_images (
  file_id     text PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
  media_type  text NOT NULL CHECK (media_type IN ('image/png', 'image/jpeg')),
  width       integer NOT NULL,
  height      integer NOT NULL,
  data        bytea NOT NULL
);
