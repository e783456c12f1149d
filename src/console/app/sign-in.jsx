// Sign-in: an admin key, checked against the keys API before the tab keeps it (sessionStorage only).
import { useState } from "preact/hooks";
import { checkKey, session } from "./api.js";

export function SignIn({ notice, onSignedIn }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);

  async function submit(e) {
    e.preventDefault();
    const typed = key.trim();
    if (!typed) return setError("Type an admin key.");
    setBusy(true);
    setError(undefined);
    try {
      await checkKey(typed);
      session.signIn(typed);
      setKey("");
      onSignedIn();
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="sign-in">
      <form class="card sign-in-card" onSubmit={submit} id="sign-in">
        <div class="brand big">
          <span class="logo" aria-hidden="true" />
          Sluice console
        </div>
        <p class="muted">Keys, usage, call logs and channels of this gateway.</p>
        {notice && !error && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <label class="field">
          <span>Admin key</span>
          <input name="key" type="password" autocomplete="off" spellcheck={false} value={key} onInput={(e) => setKey(e.currentTarget.value)} placeholder="sk-…" autofocus />
        </label>
        {error && (
          <p class="state error" role="alert" id="sign-in-error">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Checking…" : "Sign in"}
        </button>
        <p class="fine muted">The key stays in this tab only (session storage) and is sent as a Bearer header; closing the tab forgets it.</p>
      </form>
    </main>
  );
}
