// One browser history entry per page, not one per setting. Streamlit pushes an entry for every
// change of the URL's query, and the pages write each control's value back into it (so a link is
// the view): Back then stepped through a page's own settings, three or four presses to leave it.
// A change of query on the same page now replaces the entry; a move to another page still adds one.
// This script runs only once Streamlit has drawn it, which on a busy machine came after a page's
// first run had written its settings: that push left an entry of the same page behind it, the
// address as opened. A session's first write is now a replacement made by a script of its own
// (pages/lib/query.py); for an entry left so all the same (a query sent by a message before this
// script ran), the entries made from here on are marked, and Back landing on an unmarked entry of
// the page it left goes on back past it.
(() => {
  if (window.__matmulHistory) return;
  window.__matmulHistory = true;
  const h = window.history;
  const push = h.pushState.bind(h), replace = h.replaceState.bind(h);
  const marked = (state) => Object.assign({}, state && typeof state === "object" ? state : {}, {matmulEntry: true});
  const pathOf = (url) => {
    try {
      return url == null ? window.location.pathname : new URL(url, window.location.href).pathname;
    } catch (e) {
      return null;   // a URL the browser cannot read: left to the browser itself
    }
  };
  let shown = window.location.pathname;   // the page of the entry shown, to compare where Back lands
  h.replaceState = function (state, title, url) {
    const result = replace(marked(state), title, url);
    shown = window.location.pathname;
    return result;
  };
  h.pushState = function (state, title, url) {
    const path = pathOf(url);
    if (path === null) return push(state, title, url);
    const result = path === window.location.pathname ? replace(marked(state), title, url) : push(marked(state), title, url);
    shown = window.location.pathname;
    return result;
  };
  replace(marked(h.state), "", window.location.href);   // the entry shown now is this page's from here on
  window.addEventListener("popstate", () => {
    const left = shown;
    shown = window.location.pathname;
    if (!(h.state && h.state.matmulEntry) && shown === left) h.back();
  });
})();
