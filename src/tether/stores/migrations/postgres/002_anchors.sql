-- Version 2: every anchor a chunk covers (`Chunk.anchors`, its first one is `anchor`). Chunks
-- written before keep their one anchor; HTML files are marked changed, so the next ingest
-- parses them again with every anchor they hold (unchanged chunks keep their ID and vectors).
ALTER TABLE tether_chunks ADD COLUMN anchors text[] NOT NULL DEFAULT '{}';
UPDATE tether_chunks SET anchors = ARRAY[anchor] WHERE COALESCE(anchor, '') <> '';
UPDATE tether_files f SET fingerprint = 'schema-1:' || f.fingerprint, size = -1
  FROM tether_documents d
  WHERE d.collection_id = f.collection_id AND d.source = f.source AND d.format = 'html';
