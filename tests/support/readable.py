"""Is every chart and table of the page open in a browser readable at 1400×900? ``readability(br)``
opens every ``<details>``, then measures: in each chart (an inline ``svg.cgb-fig``), text elements whose boxes
overlap by more than ``OVERLAP`` of the smaller one, text drawn under ``MIN_TEXT_PX`` and text cut off by the chart's
own edge (a legend placed outside the saved box); on the page, a
horizontal scroll, and tables wider than the window that do not scroll inside a box of their own.
``assert_readable`` is the Done-when on those facts."""

from __future__ import annotations

OVERLAP = 0.10  # of the smaller box's area
MIN_TEXT_PX = 9.0

_JS = r"""
(() => {
  const out = {scroll_width: document.documentElement.scrollWidth, window: innerWidth, charts: 0, overlaps: [],
               small: [], clipped: [], tables: 0, wide: []};
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  for (const svg of document.querySelectorAll('svg.cgb-fig')) {
    out.charts += 1;
    const where = (svg.closest('section') || {}).id || '?';
    const scale = svg.getScreenCTM() ? svg.getScreenCTM().a : 1;
    const texts = Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim());
    const boxes = texts.map(t => t.getBoundingClientRect());
    const edge = svg.getBoundingClientRect();
    texts.forEach((t, i) => {
      const b = boxes[i];
      if (b.top < edge.top - 1 || b.bottom > edge.bottom + 1 || b.left < edge.left - 1 || b.right > edge.right + 1)
        out.clipped.push([where, t.textContent.slice(0, 40)]);
    });
    texts.forEach((t, i) => {
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < MIN_PX) out.small.push([where, t.textContent.slice(0, 40), Math.round(px * 10) / 10]);
    });
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w <= 0 || h <= 0) continue;
      const small = Math.min(a.width * a.height, b.width * b.height);
      if (small > 0 && w * h > OVERLAP * small)
        out.overlaps.push([where, texts[i].textContent.slice(0, 40), texts[j].textContent.slice(0, 40),
                           Math.round(100 * w * h / small)]);
    }
  }
  for (const t of document.querySelectorAll('table')) {
    out.tables += 1;
    const r = t.getBoundingClientRect();
    if (r.width <= innerWidth && r.right <= innerWidth + 1) continue;
    let box = t.parentElement, scrolls = false;
    while (box && box !== document.body) {
      const ox = getComputedStyle(box).overflowX;
      if (ox === 'auto' || ox === 'scroll') { scrolls = box.getBoundingClientRect().right <= innerWidth + 1; break; }
      box = box.parentElement;
    }
    if (!scrolls) out.wide.push([(t.closest('section') || {}).id || '?', Math.round(r.width)]);
  }
  return out;
})()
"""


def readability(br) -> dict:
    """The facts of the page open in ``br`` (a support.browser.Browser); leaves every ``<details>`` open."""
    return br.eval(_JS.replace("MIN_PX", str(MIN_TEXT_PX)).replace("OVERLAP", str(OVERLAP)))


def assert_readable(facts: dict, min_charts: int = 1) -> None:
    assert facts["charts"] >= min_charts, facts["charts"]
    assert facts["scroll_width"] <= facts["window"], f"the page scrolls sideways: {facts['scroll_width']} px"
    assert facts["overlaps"] == [], f"{len(facts['overlaps'])} overlapping chart texts: {facts['overlaps'][:8]}"
    assert facts["small"] == [], f"{len(facts['small'])} chart texts under {MIN_TEXT_PX} px: {facts['small'][:8]}"
    assert facts.get("clipped", []) == [], f"chart texts cut off by the chart's edge: {facts['clipped'][:8]}"
    assert facts["wide"] == [], f"tables wider than the window, not scrolling in their own box: {facts['wide']}"
