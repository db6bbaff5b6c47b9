-- Password-reset mail goes through the job queue (src/modules/identity/password-reset-mail.ts), and no usable
-- token may wait in the jobs table. So a row here is now recorded at request time without a token
-- (token_hash NULL until the mail job arms it with a fresh token just before sending), and a request for an
-- e-mail without an account is recorded too, with user_id NULL and never armed: both kinds of request do the
-- same writes, so the answer takes as long whether or not the account exists. Rows keep no e-mail address.
ALTER TABLE password_reset_tokens ALTER COLUMN token_hash DROP NOT NULL;
ALTER TABLE password_reset_tokens ALTER COLUMN user_id DROP NOT NULL;
