-- The row triggers of 001 refuse UPDATE and DELETE; TRUNCATE bypasses row triggers, so refuse it too.
CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
  FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_append_only();
