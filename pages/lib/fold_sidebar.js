// Presenter mode: fold the sidebar away, once per request the server makes (setup_page: on the way
// into a page, and when the mode is turned on). A request's token is run once per tab: the script is
// sent again with every rerun, and a sidebar the presenter opened afterwards stays open.
window.__matmulFoldSidebar = window.__matmulFoldSidebar || ((token) => {
  if (window.__matmulFolded === token) return;
  window.__matmulFolded = token;
  const until = Date.now() + 3000;   // the page may still be drawing its sidebar
  const fold = () => {
    const bar = document.querySelector("[data-testid='stSidebar']");
    if (bar && bar.dataset.collapsed === "true") return;
    const button = bar && bar.querySelector("[data-testid='stSidebarCollapseButton'] button");
    if (button) {
      button.click();   // as a person does: Streamlit stores the choice, so a reload opens folded too
      return;
    }
    if (Date.now() < until) setTimeout(fold, 100);
  };
  fold();
});
