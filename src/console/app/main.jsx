// The console's entry (docs/console.md): sign-in, the page bar, and the page the URL's hash names
// (#/keys — a page's name, never a key). uPlot's stylesheet and ours are bundled into console.css.
import "uplot/dist/uPlot.min.css";
import "./console.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { session } from "./api.js";
import { browserZone, zones } from "./format.js";
import { Channels } from "./channels.jsx";
import { Keys } from "./keys.jsx";
import { Logs } from "./logs.jsx";
import { Overview } from "./overview.jsx";
import { SignIn } from "./sign-in.jsx";
import { Usage } from "./usage.jsx";

const PAGES = [
  ["overview", "Overview", Overview],
  ["keys", "Keys", Keys],
  ["usage", "Usage", Usage],
  ["logs", "Logs", Logs],
  ["channels", "Channels", Channels],
];
const TZ_ITEM = "sluice.console.timeZone";

const pageOf = () => {
  const name = location.hash.replace(/^#\/?/, "");
  return PAGES.some(([n]) => n === name) ? name : "overview";
};

function App() {
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  const [notice, setNotice] = useState(undefined);
  const [page, setPage] = useState(pageOf);
  const [tz, setTz] = useState(() => sessionStorage.getItem(TZ_ITEM) || browserZone());

  useEffect(() => {
    session.onSignOut((reason) => {
      setNotice(reason);
      setSignedIn(false);
    });
    const onHash = () => setPage(pageOf());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  if (!signedIn) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={() => {
          setNotice(undefined);
          setSignedIn(true);
        }}
      />
    );
  }
  const chooseTz = (zone) => {
    sessionStorage.setItem(TZ_ITEM, zone);
    setTz(zone);
  };
  const Page = PAGES.find(([n]) => n === page)[2];
  return (
    <div class="app">
      <header class="bar">
        <a class="brand" href="#/overview">
          <span class="logo" aria-hidden="true" />
          Sluice
        </a>
        <nav class="tabs" aria-label="pages">
          {PAGES.map(([name, label]) => (
            <a href={`#/${name}`} class={name === page ? "tab active" : "tab"} aria-current={name === page ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="bar-end">
          <label class="tz" title="Time zone of every date shown">
            <span class="sr-only">Time zone</span>
            <select name="tz" value={tz} onChange={(e) => chooseTz(e.currentTarget.value)}>
              {[...new Set([tz, ...zones()])].map((z) => (
                <option value={z}>{z}</option>
              ))}
            </select>
          </label>
          <button type="button" class="ghost" onClick={() => session.signOut("Signed out.")}>
            Sign out
          </button>
        </div>
      </header>
      <main class="page" id={`page-${page}`}>
        <Page tz={tz} />
      </main>
    </div>
  );
}

render(<App />, document.getElementById("root"));
