-- Portal sign-in (issue 3): server-side sessions the server can end, two-factor (TOTP secrets encrypted at
-- rest, hashed single-use recovery codes), pending 2FA login challenges and one-time password-reset tokens.
-- Every time here is written from the app clock; nothing relies on the database's now().

-- One row per signed-in session. The JWT only names the row (claim `sid`): deleting the row ends the
-- session (SESSION_EXPIRED), setting revoked_at revokes it (TOKEN_REVOKED).
CREATE TABLE sessions (
  id                text PRIMARY KEY,
  user_id           text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  remember          boolean NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL,
  -- Absolute server-side lifetime: refresh never moves it.
  expires_at        timestamptz NOT NULL,
  refreshed_at      timestamptz,
  -- Last successful two-factor verification (login or /2fa/verify); step-up is fresh for 10 minutes.
  mfa_verified_at   timestamptz,
  revoked_at        timestamptz,
  revoked_reason    text CHECK (revoked_reason IN ('sign_out_everywhere', 'password_change', 'password_reset'))
);
CREATE INDEX sessions_user ON sessions (user_id);

-- A user's TOTP set-up. secret_sealed is AES-256-GCM ciphertext (src/platform/crypto.ts). enabled_at is
-- null between /2fa/setup and /2fa/enable. last_used_step stops a code's time-step from being used twice.
CREATE TABLE user_two_factor (
  user_id         text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret_sealed   text NOT NULL,
  enabled_at      timestamptz,
  last_used_step  bigint,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);

CREATE TABLE recovery_codes (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash   text NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL
);
CREATE INDEX recovery_codes_user ON recovery_codes (user_id, code_hash);

-- Password accepted, second factor pending: the temporary token of the login challenge (stored hashed).
CREATE TABLE login_challenges (
  id            text PRIMARY KEY,
  token_hash    text NOT NULL UNIQUE,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  remember      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  consumed_at   timestamptz
);
CREATE INDEX login_challenges_user ON login_challenges (user_id);

CREATE TABLE password_reset_tokens (
  id          text PRIMARY KEY,
  token_hash  text NOT NULL UNIQUE,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX password_reset_tokens_user ON password_reset_tokens (user_id);
