// One browser history entry per page, not one per setting. Streamlit pushes an entry for every
// change of the URL's query, and the pages write each control's value back into it (so a link is
// the view): Back then stepped through a page's own settings, three or four presses to leave it.
// A change of query on the same page now replaces the entry; a move to another page still adds one.
(() => {
  if (window.__matmulHistory) return;
  window.__matmulHistory = true;
  const push = window.history.pushState.bind(window.history);
  window.history.pushState = function (state, title, url) {
    let samePage = false;
    try {
      samePage = url != null && new URL(url, window.location.href).pathname === window.location.pathname;
    } catch (e) { /* a URL the browser cannot read: left to pushState itself */ }
    return samePage ? window.history.replaceState(state, title, url) : push(state, title, url);
  };
})();
