-- tether's PostgreSQL schema, version 6: the date a document version is to be reviewed by
-- (`DocMeta.review_by`, the health report's overdue reviews). Empty for the documents
-- written before: the metadata fields are part of each file's fingerprint
-- (tether.ingest.sync), so the ingest that migrates the collection parses every file again
-- and fills it in (unchanged chunks keep their ID and their vectors).
ALTER TABLE tether_documents ADD COLUMN review_by date;
