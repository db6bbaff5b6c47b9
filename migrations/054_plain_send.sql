-- A plain send (docs/messaging.md, "A plain send in one statement") counts its two usage periods in the same
-- statement that writes the message. Each period is counted only while it stays within its limit; the two
-- are counted together or not at all. The statement reads both in its snapshot first, so one counted without
-- the other happens only when another send moved a counter to its limit in between: then this makes the
-- statement fail (SQLSTATE CPS01), so nothing it wrote stays, and the send is judged again by the full checks.
CREATE FUNCTION plain_send_counted(periods integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF periods = 2 THEN
    RETURN true;
  ELSIF periods = 0 THEN
    RETURN false;
  END IF;
  RAISE EXCEPTION 'a plain send counted % of its 2 usage periods: judged again by the full checks', periods
    USING ERRCODE = 'CPS01';
END
$$;
