// The explorer's animation player, added once to the page by pages/lib/ui.py and carried by the
// exported HTML player (engine/plots/movie.py).
// Plotly's own controls give Play, Pause and a slider; this adds what they lack:
//  - "◀ Step" / "Step ▶" buttons (updatemenu buttons with method "skip", which Plotly leaves to us):
//    they move one frame from the slider's current position, with the same redraw setting as Play;
//  - Left/Right arrow keys do the same for the last figure the mouse was over;
//  - Pausing or scrubbing while a figure plays makes Plotly reject the interrupted animation's
//    promise with `undefined` and nobody catches it: that is the expected end of an animation, not
//    an error, so it is not reported as one. Every other rejection still is;
//  - Play continues from the frame shown: Plotly's "fromcurrent" starts after the last frame it
//    animated itself, which a figure opened on a frame (a shared link) has not got, so Play began at 0;
//  - a figure whose layout.meta.url_key names a query parameter keeps it at the frame shown once it
//    stands still (paused, stepped, scrubbed, played to the end), so a reload or a copied link opens
//    there, and goes back to that frame when a rerun draws it anew on the frame it was opened on;
//  - it starts loading Streamlit's Plotly module straight away (see pages/lib/ui.py), next to the
//    app's own script, so a first visit does not wait for it after the server has answered.
(() => {
  if (window.__matmulPlayer) return;
  window.__matmulPlayer = true;

  const app = document.querySelector('script[src*="/static/js/index"]');
  if (window.__matmulPlotlyModule && app) {
    import(new URL(window.__matmulPlotlyModule, app.src).href).catch(() => {});
  }

  window.addEventListener("unhandledrejection", (e) => {
    if (e.reason === undefined) e.preventDefault();
  });

  const frameNames = (gd) => ((gd._transitionData || {})._frames || []).map((f) => f.name);

  function step(gd, delta) {
    const names = frameNames(gd);
    const slider = ((gd._fullLayout || {}).sliders || [])[0];
    if (!names.length || !slider || !window.Plotly) return;
    const next = Math.min(names.length - 1, Math.max(0, (slider.active || 0) + delta));
    const play = gd.layout.updatemenus[0].buttons[0].args[1];
    window.Plotly.animate(gd, [names[next]], {
      frame: { duration: 0, redraw: !!(play.frame || {}).redraw },
      mode: "immediate", transition: { duration: 0 },
    }).catch(() => {});
  }

  const active = (gd) => (((gd._fullLayout || {}).sliders || [])[0] || {}).active || 0;

  // Before Plotly's own handler (capture phase): Play's "fromcurrent" starts after this frame.
  function fromShown(gd) {
    const names = frameNames(gd);
    if (names.length && gd._fullLayout) gd._fullLayout._currentFrame = names[active(gd)];
  }

  // Where each such figure stood, by page and parameter: the frame the server opened it on and the
  // one it was left on. Any rerun (another control changed) draws the figure anew on the server's
  // frame, which is the page's control's, not the player's: the player's frame was lost, and the link
  // rewritten to the control's. A figure drawn anew on the frame it was opened on before goes back to
  // where it was left; one opened on another frame (the control changed) starts there.
  const stood = new Map();
  const drawn = new WeakSet();

  function restore(gd, key, name) {
    const where = window.location.pathname + "|" + key;
    if (!drawn.has(gd)) {
      drawn.add(gd);
      gd.__opened = name;
      const last = stood.get(where);
      if (last && last.opened === name && last.shown !== name && frameNames(gd).includes(last.shown)) {
        window.Plotly.animate(gd, [last.shown], {frame: {duration: 0, redraw: false}, mode: "immediate",
                                                 transition: {duration: 0}}).catch(() => {});
        return true;
      }
    }
    stood.set(where, {opened: gd.__opened, shown: name});
    return false;
  }

  // Polled rather than hooked on Plotly's events: Streamlit replaces a figure's div when the page
  // reruns, and a poll needs no listener re-attached. Only the address changes (replaceState): a
  // rerun to move the page's own control would redraw the figure under a person still scrubbing it.
  setInterval(() => {
    document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
      const key = ((gd.layout || {}).meta || {}).url_key;
      const trans = gd._transitionData;
      if (!key || !trans || trans._animationRaf || (trans._frameQueue || []).length) return;
      const name = frameNames(gd)[active(gd)];
      if (name === undefined || !window.Plotly || restore(gd, key, name)) return;
      const url = new URL(window.location.href);
      if (url.searchParams.get(key) === name) return;
      url.searchParams.set(key, name);
      window.history.replaceState(window.history.state, "", url);
    });
  }, 300);

  let lastPlot = null;
  document.addEventListener("mouseover", (e) => {
    const gd = e.target.closest && e.target.closest(".js-plotly-plot");
    if (gd) lastPlot = gd;
  }, true);

  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest(".updatemenu-button");
    if (!button) return;
    const label = button.textContent || "";
    const gd = button.closest(".js-plotly-plot");
    if (label.includes("Play")) fromShown(gd);
    else if (label.includes("◀")) step(gd, -1);
    else if (label.includes("▶") && label.includes("Step")) step(gd, 1);
  }, true);

  document.addEventListener("keydown", (e) => {
    if (!lastPlot || !document.body.contains(lastPlot)) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || e.target.isContentEditable) return;
    if (e.key === "ArrowRight") step(lastPlot, 1);
    else if (e.key === "ArrowLeft") step(lastPlot, -1);
  });
})();
