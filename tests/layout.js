// What a 1280x720 screen shows of a page, measured (tests/test_browser_layout.py): every text box
// (HTML text by its text node's own box, Plotly's SVG text by its element's box), its font size, and
// what is cut off or overlaps. Returns plain data; the test decides.
(minFont) => {
  const vw = window.innerWidth, vh = window.innerHeight;
  const main = document.querySelector("[data-testid='stMain']") || document.body;
  const shown = (el) => {
    // a folded expander's content (its <details> closed) is not on the screen, whatever its boxes say;
    // nor is an expander's inside a folded one, its summary included (the Controls expander of
    // presenter mode holds the Kernel parameters one)
    for (let fold = el.closest("details"); fold; fold = fold.parentElement && fold.parentElement.closest("details")) {
      const own = fold.querySelector(":scope > summary");
      if (!fold.open && !(own && own.contains(el))) return false;
    }
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === "none" || s.visibility === "hidden" || +s.opacity === 0) return false;
    }
    return true;
  };
  const rect = (r) => ({ x: r.left, y: r.top, r: r.right, b: r.bottom });
  const name = (t) => t.trim().replace(/\s+/g, " ").slice(0, 60);
  // Inside an ancestor that hides its overflow (a folded expander is one of no height), a box is
  // seen only where it meets that ancestor's
  const clipped = (el, r) => {
    let box = { x: r.left, y: r.top, r: r.right, b: r.bottom };
    // (within the page's main column: the app's frame clips at the screen's bottom, where the main
    // column scrolls, and what is below the fold is measured too)
    for (let e = el.parentElement; e && e !== main && main.contains(e); e = e.parentElement) {
      const s = getComputedStyle(e);
      // a box of its own that scrolls (a long listing) shows only what is inside it, too
      const hides = (o) => ["hidden", "clip", "auto", "scroll"].includes(o);
      if (!hides(s.overflowX) && !hides(s.overflowY)) continue;
      const c = e.getBoundingClientRect();
      box = { x: Math.max(box.x, c.left), y: Math.max(box.y, c.top), r: Math.min(box.r, c.right), b: Math.min(box.b, c.bottom) };
      if (box.r - box.x < 1 || box.b - box.y < 1) return null;
    }
    return box;
  };
  const texts = [];
  // HTML text: each line of each text node, by its own box (a block's box is wider than its words)
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || el.closest("svg, script, style") || !shown(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1 || !clipped(el, r)) continue;
      texts.push({ text: name(n.textContent), font: parseFloat(getComputedStyle(el).fontSize), ...rect(r), svg: null });
    }
  }
  // Plotly's SVG text (not the hover layer)
  const plots = Array.from(main.querySelectorAll(".js-plotly-plot"));
  plots.forEach((gd, p) => {
    const svg = gd.querySelector("svg.main-svg");
    const bounds = svg ? rect(svg.getBoundingClientRect()) : null;
    gd.querySelectorAll("svg text").forEach((t) => {
      if (!t.textContent.trim() || t.closest(".hoverlayer") || !shown(t)) return;
      const r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1 || !clipped(gd, gd.getBoundingClientRect())) return;
      const sizes = [t, ...t.querySelectorAll("tspan")].filter((e) => e.textContent.trim())
        .map((e) => parseFloat(getComputedStyle(e).fontSize));
      texts.push({ text: name(t.textContent), font: Math.min(...sizes), ...rect(r), svg: p, bounds });
    });
  });
  const small = texts.filter((t) => t.font < minFont - 0.01).map((t) => `${t.text} (${t.font} px)`);
  // cut off: SVG text past its figure's edges, text past the screen's sides, truncated HTML
  // (an ellipsis or hidden overflow), tables that scroll sideways (columns out of sight)
  const cut = [];
  texts.forEach((t) => {
    if (t.bounds && (t.r > t.bounds.r + 1 || t.x < t.bounds.x - 1 || t.b > t.bounds.b + 1 || t.y < t.bounds.y - 1))
      cut.push(`figure text past its figure: ${t.text}`);
    else if (t.r > vw + 1 || t.x < -1) cut.push(`past the screen's side: ${t.text}`);
  });
  main.querySelectorAll("*").forEach((el) => {
    if (el.closest("svg") || !el.textContent.trim() || !shown(el) || !clipped(el, el.getBoundingClientRect())) return;
    const s = getComputedStyle(el);
    const clips = s.textOverflow === "ellipsis" || ["hidden", "clip"].includes(s.overflowX);
    // a label: its own text, or a short one in a box of its own (a select's value, a toggle's label)
    const own = Array.from(el.childNodes).some((c) => c.nodeType === 3 && c.textContent.trim());
    const label = own || (el.textContent.trim().length < 120 && !el.querySelector("svg:not([data-testid]) text, canvas, table, .js-plotly-plot"));
    if (clips && label && el.scrollWidth > el.clientWidth + 1) cut.push(`truncated: ${name(el.textContent)}`);
  });
  main.querySelectorAll("input").forEach((el) => {   // a select's or a number's value, wider than its box
    if (el.value && shown(el) && clipped(el, el.getBoundingClientRect()) && el.scrollWidth > el.clientWidth + 1)
      cut.push(`truncated: ${name(el.value)}`);
  });
  main.querySelectorAll("[data-testid='stDataFrame'] .dvn-scroller, [data-testid='stTable']").forEach((el) => {
    if (shown(el) && el.scrollWidth > el.clientWidth + 1) {
      const box = el.closest("[data-testid='stDataFrame'], [data-testid='stTable']");
      cut.push(`table scrolls sideways (${el.scrollWidth} px in ${el.clientWidth}): ${name(box.textContent).slice(0, 40)}`);
    }
  });
  // overlap: two text boxes sharing more than a third of the smaller one
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i], b = texts[j];
      const w = Math.min(a.r, b.r) - Math.max(a.x, b.x), h = Math.min(a.b, b.b) - Math.max(a.y, b.y);
      if (w <= 0 || h <= 0) continue;
      const least = Math.min((a.r - a.x) * (a.b - a.y), (b.r - b.x) * (b.b - b.y));
      if (w * h > least / 3) overlaps.push(`'${a.text}' on '${b.text}'`);
    }
  }
  const h1 = document.querySelector("h1");
  const box = (el) => (el ? rect(el.getBoundingClientRect()) : null);
  const play = Array.from(main.querySelectorAll(".updatemenu-button")).find((b) => b.textContent.includes("Play"));
  return { small, cut, overlaps, h1: box(h1), play: box(play), plot: box(plots[0]), vw, vh,
           scrollY: window.scrollY, count: texts.length };
}
