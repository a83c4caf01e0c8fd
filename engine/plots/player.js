// The explorer's animation player, added once to the page by pages/lib/ui.py and carried by the
// exported HTML player (engine/plots/movie.py).
// Plotly's own controls give Play, Pause and a slider; this adds what they lack:
//  - "◀ Step" / "Step ▶" buttons (updatemenu buttons with method "skip", which Plotly leaves to us):
//    they move one frame from the slider's current position, with the same redraw setting as Play;
//  - Left/Right arrow keys do the same for the last figure the mouse was over (not where the focus is
//    on a control that takes the arrows itself: a text box, a slider, a list);
//  - Pausing or scrubbing while a figure plays makes Plotly reject the interrupted animation's
//    promise with `undefined` and nobody catches it: that is the expected end of an animation, not
//    an error, so it is not reported as one. Every other rejection still is;
//  - Play continues from the frame shown: Plotly's "fromcurrent" starts after the last frame it
//    animated itself, which a figure opened on a frame (a shared link) has not got, so Play began at 0;
//  - a figure drawn anew while it plays (a rerun's new figure) plays on, from the frame it shows, not
//    from the old figure's frames (stopsOnReact, below);
//  - a figure whose layout.meta.url_key names a query parameter tells the server and the address
//    which frame it stands on, so a rerun, a reload or a copied link opens it there (below);
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

  // Streamlit hands a rerun's figure to Plotly.react, which makes the figure's frames anew in a new
  // _transitionData and leaves a playing animation's loop running on the old one: it went on drawing
  // the old figure's frames over the new one, and once the figure was purged (its element gone; purge
  // cancels only the loop it can see) the loop threw TypeErrors sixty times a second, on every page
  // after it, until a reload. So a figure's loop is stopped before react replaces it, and one that was
  // playing (frames still queued: a step's one frame leaves the queue as its loop starts) plays on once
  // drawn anew (replay, below): Streamlit draws a rerun's figure with two or three reacts tens of
  // milliseconds apart, and the player's replay after the first was stopped by the next in 1 rerun in 3.
  // Installed before any animation can start: on a person's first pointer or key (reaching: the figure's
  // own Play, slider and steps go through it), and by the poll, which the player's own replay runs in.
  function stopsOnReact() {
    const P = window.Plotly;
    if (!P || P.__matmulReact) return;
    const react = P.react;
    P.react = function (gd, ...rest) {
      const div = typeof gd === "string" ? document.getElementById(gd) : gd;
      const trans = div && div._transitionData;
      if (trans && trans._animationRaf) {
        const key = div.layout && urlKey(div);
        // (only a figure of the page shown: one left from the page before must not set this one playing)
        if (key && (trans._frameQueue || []).length > 0 && pageOf(div) === pageName()) {
          replay.set(window.location.pathname + "|" + key, {until: Date.now() + 8000, since: Date.now()});
        }
        window.cancelAnimationFrame(trans._animationRaf);
        trans._animationRaf = null;
        trans._frameQueue = [];
      }
      return react.call(this, gd, ...rest);
    };
    P.__matmulReact = true;
  }

  // Left/Right step the figure unless what has the focus takes the arrows itself: a text box, a
  // slider, a list, radio buttons. Nor are they a control reached for (reaching, below).
  const ARROW_TAKERS = "input, textarea, select, [contenteditable=''], [contenteditable='true'], [role=slider], " +
    "[role=combobox], [role=listbox], [role=option], [role=radio], [role=radiogroup], [role=spinbutton], [role=tab]";
  const stepKey = (e) => (e.key === "ArrowRight" || e.key === "ArrowLeft") &&
    !(e.target.closest && e.target.closest(ARROW_TAKERS));
  const redraws = (gd) => !!(gd.layout.updatemenus[0].buttons[0].args[1].frame || {}).redraw;

  function step(gd, delta) {
    const names = frameNames(gd);
    const slider = ((gd._fullLayout || {}).sliders || [])[0];
    if (!names.length || !slider || !window.Plotly) return;
    const next = Math.min(names.length - 1, Math.max(0, (slider.active || 0) + delta));
    window.Plotly.animate(gd, [names[next]], {
      frame: { duration: 0, redraw: redraws(gd) },
      mode: "immediate", transition: { duration: 0 },
    }).catch(() => {});
  }

  const active = (gd) => (((gd._fullLayout || {}).sliders || [])[0] || {}).active || 0;

  // Before Plotly's own handler (capture phase): Play's "fromcurrent" starts after this frame.
  function fromShown(gd) {
    const names = frameNames(gd);
    if (names.length && gd._fullLayout) gd._fullLayout._currentFrame = names[active(gd)];
  }

  // A figure whose layout.meta.url_key names a query parameter: the frame it shows goes to the server
  // and to the address. To the server through a hidden input that commits without a rerun
  // (pages/lib/view_state.py, frame_channel: it rides with the next rerun, whichever control asks for
  // it, and with a move to another page), so a rerun draws the figure anew on that frame; to the
  // address (replaceState) once it stands still, so a reload or a copied link opens there. Written on
  // each poll, playing or not, and at once as a person reaches for a control outside the figure, so
  // the rerun that control makes opens the figure where it was. A figure playing then plays on once
  // it is drawn anew (a new speed, the same warp further on).
  const shown = {};             // page -> {url_key: frame}: what the hidden input holds
  const replay = new Map();     // page|key -> {until, since}: held mid-play as a control was reached for
  const pageName = () => window.location.pathname.split("/").filter(Boolean).pop() || "";

  const urlKey = (gd) => ((gd.layout || {}).meta || {}).url_key;
  const playing = (gd) => {
    const trans = gd._transitionData;
    return !!trans && (!!trans._animationRaf || (trans._frameQueue || []).length > 0);
  };

  // The page a figure belongs to: the one its layout names (AnimatedFigure.on_page), else where this
  // drawing of it (its layout object) was first seen. A page's figure can outlive a move to another
  // (Back, until Streamlit clears it), or arrive after one (a run Forward left behind), and its frame
  // must not become the next page's.
  const pageOf = (gd) => ((gd.layout.meta || {}).page
                          || (gd.layout.__matmulPage = gd.layout.__matmulPage || pageName()));

  function report(page, key, name) {
    shown[page] = Object.assign({}, shown[page], {[key]: name});
    const input = document.querySelector(".st-key-_frames_shown input");
    const text = JSON.stringify(shown);
    if (!input || input.value === text) return;   // no input: the exported HTML player, no server to tell
    // React keeps its own copy of an input's value: set it through the prototype's setter, so the
    // input event below reads as a change and the widget commits it (live, on_change="ignore").
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(input, text);
    input.dispatchEvent(new Event("input", {bubbles: true}));
  }

  function play(gd) {
    const button = ((((gd.layout || {}).updatemenus || [])[0] || {}).buttons || [])[0];
    if (!button || !window.Plotly) return;
    fromShown(gd);
    window.Plotly.animate(gd, button.args[0], button.args[1]).catch(() => {});
  }

  // Polled rather than hooked on Plotly's events: Streamlit replaces a figure's div, or its layout,
  // when the page reruns, and a poll needs no listener re-attached. Only the address changes
  // (replaceState), not the page's own controls: a rerun would redraw the figure under a person
  // still scrubbing it.
  setInterval(() => {
    stopsOnReact();
    // a move to another page ends any playing on: coming back draws the figure still
    for (const where of replay.keys()) if (!where.startsWith(window.location.pathname + "|")) replay.delete(where);
    document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
      const key = urlKey(gd);
      const name = frameNames(gd)[active(gd)];
      if (!key || name === undefined || !gd.layout || !window.Plotly) return;
      const page = pageOf(gd);
      report(page, key, name);
      if (playing(gd) || page !== pageName()) return;
      const where = window.location.pathname + "|" + key;
      const again = replay.get(where);
      if (!gd.layout.__matmulSeen) {   // drawn anew: was it playing when a control was reached for?
        gd.layout.__matmulSeen = true;
        replay.delete(where);
        if (again && Date.now() < again.until) play(gd);
      } else if (again && Date.now() - again.since > 1500) {
        replay.delete(where);   // no rerun came (what was touched changed nothing): play on as it was
        play(gd);
      }
      const url = new URL(window.location.href);
      if (url.searchParams.get(key) === name) return;
      url.searchParams.set(key, name);
      window.history.replaceState(window.history.state, "", url);
    });
  }, 300);

  // Capture phase: before the control's own handler asks for the rerun. Only a person's events: the
  // input event report() dispatches is not one. A figure playing is held on the frame it shows: had it
  // played on while the page reran, the figure drawn anew (on the frame reported here) would have
  // stepped back up to a second's worth of frames before playing on.
  function reaching(e) {
    stopsOnReact();   // also a press inside a figure: its Play, its slider
    if (!e.isTrusted || (e.type === "keydown" && stepKey(e))) return;
    const inside = e.target.closest && e.target.closest(".js-plotly-plot");
    document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
      const key = urlKey(gd);
      const name = frameNames(gd)[active(gd)];
      if (!key || name === undefined || !gd.layout) return;
      const where = window.location.pathname + "|" + key;
      if (inside) {   // Pause, a step, the slider: the figure's own controls, not a rerun's
        replay.delete(where);
        return;
      }
      if (playing(gd)) {
        window.Plotly.animate(gd, [name], {frame: {duration: 0, redraw: redraws(gd)}, mode: "immediate",
                                           transition: {duration: 0}}).catch(() => {});
        replay.set(where, {until: Date.now() + 8000, since: Date.now()});
      }
      report(pageOf(gd), key, name);
    });
  }
  document.addEventListener("pointerdown", reaching, true);
  document.addEventListener("keydown", reaching, true);

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
    if (!lastPlot || !document.body.contains(lastPlot) || !stepKey(e)) return;
    step(lastPlot, e.key === "ArrowRight" ? 1 : -1);
  });
})();
