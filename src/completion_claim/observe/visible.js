// What a person can see of the elements a locator matched (docs/spec.md, section 7.4).
// The observer's own fixed script, never text from a claim or a command line. It runs in an
// isolated world (observe/dom.py), where the page's scripts cannot replace the functions it
// calls, while the page's own scripts are stopped (observe/dom.py), so none of them runs
// between its steps. It judges the layout in one call, leaving the page as it was read
// (scrolled, pointer-events switched on); then, for each part of the text of the element read
// that fits on the screen (nextArea), the observer captures it with and without its glyphs
// (hideText, showText) and the script judges the captures (judgeDrawn); finish() puts
// everything back and says what was seen.
(elements, attrName) => {
  const MIN_FONT_PX = 4;
  const MIN_CONTRAST = 1.2;
  const MAX_BLUR_PX = 2;
  const MAX_TEXT = 100000;
  // What "drawn" means, judged on captures of the text's area with and without its glyphs: a
  // pixel differs when its two colours have WCAG's contrast of MIN_CONTRAST or more (the bar
  // colour is judged by); every character must change at least one such pixel inside its own
  // box (a glyph covered, masked or faded whole changes none), and each text node at least
  // MIN_INK of the area of its characters' boxes. Measured on Debian's Chromium, letters drawn
  // whole change 25% to 57% of their boxes from 4 px to 16 px, a row of grey full stops at
  // 12 px 4.8% (2 pixels each); covered, masked or shrunk text changes none, and a word partly
  // covered fails at the first glyph covered whole.
  const MIN_GLYPH_PIXELS = 1;
  const MIN_INK = 0.03;
  const MAX_GLYPHS = 5000;
  const MAX_WINDOWS = 8;
  const REPLACED = new Set(["img", "video", "canvas", "iframe", "embed", "object", "svg",
    "input", "textarea", "select", "meter", "progress"]);
  const BLOCK_BREAK = "\n";
  const doc = document;
  const root = doc.documentElement;
  const css = (el, pseudo) => getComputedStyle(el, pseudo);
  const paint = new OffscreenCanvas(1, 1).getContext("2d");

  // [r, g, b, a] of a computed colour, or null for one outside sRGB's rgb() (then unknown).
  function rgba(color) {
    paint.fillStyle = "#000";
    paint.fillStyle = color;
    const value = String(paint.fillStyle);
    if (value.startsWith("#")) {
      const n = parseInt(value.slice(1), 16);
      return [(n >> 16) & 255, (n >> 8) & 255, n & 255, 1];
    }
    const parts = value.startsWith("rgba(") ? value.match(/[\d.]+/g) : null;
    return parts && parts.length === 4 ? parts.map(Number) : null;
  }

  function luminance([r, g, b]) {
    const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  }

  function contrast(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }

  // The element that holds a box: display: contents gives none, its parent's box shows it.
  function boxOf(el) {
    while (el && el !== root && css(el).display === "contents") el = el.parentElement;
    return el;
  }

  // opacity and filter: opacity() multiply down the tree; 0 (or next to it) hides everything.
  function opacityOf(el) {
    let product = 1;
    for (let at = el; at; at = at.parentElement) {
      const style = css(at);
      product *= Number(style.opacity);
      for (const [, amount] of style.filter.matchAll(/opacity\(([\d.]+)(%?)\)/g)) {
        product *= Number(amount) / (amount.endsWith("%") ? 100 : 1);
      }
    }
    return product;
  }

  // A blur of a few pixels down the tree (filter: blur()) leaves no word readable.
  function blurred(el) {
    let radius = 0;
    for (let at = el; at; at = at.parentElement) {
      for (const [, px] of css(at).filter.matchAll(/blur\(([\d.]+)px\)/g)) radius += Number(px);
    }
    return radius >= MAX_BLUR_PX;
  }

  const renderings = new Map();
  function rendered(el) {
    if (!renderings.has(el)) renderings.set(el, isRendered(el));
    return renderings.get(el);
  }
  function isRendered(el) {
    const box = boxOf(el);
    return Boolean(box) && box.checkVisibility({
      checkOpacity: true, opacityProperty: true,
      checkVisibilityCSS: true, visibilityProperty: true,
    }) && opacityOf(box) > 0.05 && !blurred(box);
  }

  // Something painted above the target that hides it: a background, an image, a control.
  function opaque(el) {
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return false;
    if (REPLACED.has(el.localName)) return true;
    const style = css(el);
    const background = rgba(style.backgroundColor);
    return style.backgroundImage !== "none" || style.backdropFilter !== "none"
      || (background !== null && background[3] > 0);
  }

  // The backdrop of a point: the first thing painted under the target; null when it cannot be
  // told (an image, a gradient, a translucent layer), and then the text is taken as readable.
  function backdrop(below) {
    for (const el of below) {
      const style = css(el);
      if (REPLACED.has(el.localName) || style.backgroundImage !== "none") return null;
      const color = rgba(style.backgroundColor);
      if (color === null) return null;
      if (color[3] >= 1) return color;
      if (color[3] > 0) return null;
    }
    const scheme = css(root).colorScheme;
    return scheme.includes("dark") ? null : [255, 255, 255, 1];
  }

  // Pages may be scrolled by a person: the viewport (unless its overflow is hidden) and boxes
  // whose overflow is auto or scroll. A box with overflow hidden or clip is never scrolled, so
  // what it clips stays clipped.
  const scrolled = new Map();
  function scrollBy(box, left, top) {
    if (!scrolled.has(box)) scrolled.set(box, [box.scrollLeft, box.scrollTop]);
    box.scrollBy({ left, top, behavior: "instant" });
  }
  function viewportScrolls(axis) {
    const own = css(root)[axis];
    const value = own === "visible" && doc.body ? css(doc.body)[axis] : own;
    return value !== "hidden" && value !== "clip";
  }
  function reveal(rectOf, from) {
    for (let box = from; box && box !== doc.body && box !== root; box = box.parentElement) {
      const style = css(box);
      const x = ["auto", "scroll"].includes(style.overflowX);
      const y = ["auto", "scroll"].includes(style.overflowY);
      if (!x && !y) continue;
      const r = rectOf();
      const b = box.getBoundingClientRect();
      scrollBy(box,
        x ? r.left + r.width / 2 - (b.left + box.clientLeft + box.clientWidth / 2) : 0,
        y ? r.top + r.height / 2 - (b.top + box.clientTop + box.clientHeight / 2) : 0);
    }
    const r = rectOf();
    const scroller = doc.scrollingElement || root;
    scrollBy(scroller,
      viewportScrolls("overflowX") ? r.left + r.width / 2 - root.clientWidth / 2 : 0,
      viewportScrolls("overflowY") ? r.top + r.height / 2 - root.clientHeight / 2 : 0);
    return rectOf();
  }

  // Three points across the middle of the part of a rectangle inside the viewport.
  function points(r) {
    const left = Math.max(r.left, 0);
    const right = Math.min(r.right, root.clientWidth);
    const top = Math.max(r.top, 0);
    const bottom = Math.min(r.bottom, root.clientHeight);
    if (right - left < 1 || bottom - top < 1) return [];
    const y = (top + bottom) / 2;
    return [0.2, 0.5, 0.8].map((k) => [left + (right - left) * k, y]);
  }

  // Why ``owner`` is not what a person sees at (x, y), or null when it is: the first thing
  // hit-testing finds there that is not see-through. ``text``: its colour (with the opacity
  // above it) must also stand out from what lies under it.
  function hiddenAt(owner, x, y, text) {
    const scope = owner.getRootNode();
    const hits = (scope.elementsFromPoint ? scope : doc).elementsFromPoint(x, y);
    for (let i = 0; i < hits.length; i++) {
      const hit = hits[i];
      if (hit === owner || (!text && owner.contains(hit))) {
        if (!text) return null;
        const ground = backdrop(hits.slice(i));
        return ground === null || readable(owner, ground) ? null : "in the colour of its background";
      }
      if (opaque(hit)) return "covered by another element";
    }
    return "clipped away";
  }

  function readable(owner, ground) {
    const style = css(owner);
    if (style.textShadow !== "none") return true;
    const stroke = rgba(style.webkitTextStrokeColor);
    if (parseFloat(style.webkitTextStrokeWidth) > 0 && stroke && stroke[3] > 0) return true;
    const fill = rgba(style.webkitTextFillColor);
    if (fill === null) return true;
    const alpha = fill[3] * opacityOf(owner);
    const shown = fill.slice(0, 3).map((c, k) => alpha * c + (1 - alpha) * ground[k]);
    return contrast(shown, ground) >= MIN_CONTRAST;
  }

  // Why a person cannot see this text node, or null when they can; asked once per node, however
  // many of the matched elements hold it.
  const textVerdicts = new Map();
  function textHidden(node) {
    if (!textVerdicts.has(node)) textVerdicts.set(node, judgeText(node));
    return textVerdicts.get(node);
  }
  function judgeText(node) {
    const owner = boxOf(node.parentElement);
    if (!owner || !rendered(owner)) return "not rendered (display, visibility, opacity or blur)";
    if (parseFloat(css(owner).fontSize) < MIN_FONT_PX) return "too small to read";
    if (!drawnTallEnough(node)) return "too small to read";
    const range = doc.createRange();
    range.selectNodeContents(node);
    // Hit-testing finds text only inside its element's box: text overflowing the box is judged
    // by the part inside it (of a box of no size, where the text lies).
    const inBox = (r) => {
      const b = owner.getBoundingClientRect();
      if (!r || b.width < 1 || b.height < 1) return r;
      const left = Math.max(r.left, b.left);
      const top = Math.max(r.top, b.top);
      return DOMRectReadOnly.fromRect({
        x: left, y: top,
        width: Math.max(Math.min(r.right, b.right) - left, 0),
        height: Math.max(Math.min(r.bottom, b.bottom) - top, 0),
      });
    };
    const count = range.getClientRects().length;
    let lines = 0;
    for (let k = 0; k < count; k++) {
      const first = range.getClientRects()[k];
      if (!first || first.width < 1 || first.height < 1) continue;
      const r = reveal(() => inBox(range.getClientRects()[k]), node.parentElement);
      const at = points(r);
      if (at.length === 0) return "out of reach of scrolling";
      for (const [x, y] of at) {
        const why = hiddenAt(owner, x, y, true);
        if (why !== null) return why;
      }
      lines++;
    }
    return lines > 0 ? null : "of no size";
  }

  // The size the text is drawn at, after transforms and zoom: each line's box on screen, not
  // the computed font size (which scale() and zoom leave as it was).
  function drawnTallEnough(node) {
    const range = doc.createRange();
    range.selectNodeContents(node);
    const lines = [...range.getClientRects()].filter((r) => r.width >= 1 && r.height >= 1);
    return lines.every((r) => r.height >= MIN_FONT_PX);
  }

  function boxHidden(el) {
    const owner = boxOf(el);
    if (!owner || !rendered(owner)) return "not rendered (display, visibility, opacity or blur)";
    const rects = owner.getClientRects();
    let why = "of no size";
    for (let k = 0; k < rects.length; k++) {
      if (rects[k].width < 1 || rects[k].height < 1) continue;
      const r = reveal(() => owner.getClientRects()[k], owner.parentElement);
      const at = points(r);
      if (at.length === 0) why = "out of reach of scrolling";
      for (const [x, y] of at) {
        why = hiddenAt(owner, x, y, false);
        if (why === null) return null;
      }
    }
    return why;
  }

  // Generated text (::before, ::after) a person reads with the element's own; null when it
  // is taken out of the flow, where the observer cannot tell whether anyone sees it.
  function generated(el, pseudo) {
    const style = css(el, pseudo);
    if (style.content === "none" || style.content === "normal" || style.display === "none") {
      return "";
    }
    if (style.visibility !== "visible" || Number(style.opacity) === 0) return "";
    if (parseFloat(style.fontSize) < MIN_FONT_PX) return "";
    const color = rgba(style.webkitTextFillColor);
    if (color !== null && color[3] === 0) return "";
    let text = "";
    for (const [, quoted, attr] of style.content.matchAll(/"((?:[^"\\]|\\.)*)"|attr\(([^)]*)\)/g)) {
      text += quoted !== undefined ? quoted.replace(/\\(.)/g, "$1") : el.getAttribute(attr.trim()) || "";
    }
    if (!text.trim()) return "";
    if (style.position === "absolute" || style.position === "fixed") return null;
    return text;
  }

  function transform(text, style) {
    switch (style.textTransform) {
      case "uppercase": return text.toUpperCase();
      case "lowercase": return text.toLowerCase();
      case "capitalize": return text.replace(/(^|\s)(\S)/g, (_, a, b) => a + b.toUpperCase());
      default: return text;
    }
  }

  // The text a person sees: text nodes seen on screen, and generated text, with a break
  // between blocks (as innerText has it); never the text of what is hidden.
  // ``quick``: only whether any of it is seen, for the elements that are only counted.
  function visibleText(el, quick) {
    const out = [];  // [text, the text node it is the text of, or null]
    let seen = false;
    let size = 0;
    let placed = true;
    let hidden = null;
    const generatedBy = new Map();  // element: how many characters its ::before and ::after add
    const push = (text, node = null) => { out.push([text, node]); size += text.length; };
    function walk(node) {
      if (size > MAX_TEXT || (quick && seen)) return;
      if (node.nodeType === Node.TEXT_NODE) {
        if (!node.data.trim()) { push(" "); return; }
        const why = textHidden(node);
        if (why === null) {
          seen = true;
          push(transform(node.data, css(node.parentElement)), node);
        } else {
          hidden = hidden || why;
        }
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      const tag = node.localName;
      if (["script", "style", "template", "noscript"].includes(tag)) return;
      const style = css(node);
      if (style.display === "none") {
        if (node.textContent.trim()) hidden = hidden || "not rendered (display: none)";
        return;
      }
      const block = !style.display.startsWith("inline") && style.display !== "contents";
      if (block || tag === "br") push(BLOCK_BREAK);
      const shown = rendered(node);
      for (const pseudo of ["::before", null, "::after"]) {
        if (pseudo === null) {
          for (const child of node.childNodes) walk(child);
          continue;
        }
        const text = shown ? generated(node, pseudo) : "";
        if (text === null) placed = false;
        else if (text) {
          push(transform(text, css(node, pseudo)));
          if (text.trim()) generatedBy.set(node, (generatedBy.get(node) || 0) + text.trim().length);
        }
      }
      if (block) push(BLOCK_BREAK);
    }
    walk(el);
    return { text: joined(out), hidden, placed, out, generatedBy };
  }

  function joined(out) {
    return out.map(([text]) => text).join("").replace(/\s+/g, " ").trim();
  }

  function judge(el, quick) {
    const { text, hidden, placed, out, generatedBy } = visibleText(el, quick);
    if (!placed) return { visible: false, why: "generated text out of the flow", text };
    if (text) return { visible: true, why: null, text, out, generatedBy };
    // Text, all of it hidden: the element shows nothing. No text: its box must be seen.
    const why = hidden === null ? boxHidden(el) : `its text is ${hidden}`;
    return { visible: why === null, why: why === null ? null : why, text };
  }

  // Every style attribute the reading changes, as it was before: put back exactly.
  const styled = new Map();
  function restyle(el, name, value) {
    if (!styled.has(el)) styled.set(el, el.getAttribute("style"));
    el.style.setProperty(name, value, "important");
  }
  function putBack(el) {
    const style = styled.get(el);
    // Chromium writes a style changed through el.style into the attribute only when it is
    // next read: read it first, or removing it leaves style="" behind.
    el.getAttribute("style");
    if (style === null) el.removeAttribute("style");
    else el.setAttribute("style", style);
  }
  function restore() {
    for (const el of styled.keys()) putBack(el);
    for (const [box, [left, top]] of scrolled) box.scrollTo({ left, top, behavior: "instant" });
  }

  // A person's pointer never decides what they see: pointer-events: none is switched off for
  // the hit tests. content-visibility: auto lays its content out only once it nears the
  // viewport, as it does for a person scrolling to it: it is laid out now.
  for (const el of doc.querySelectorAll("*")) {
    const style = css(el);
    if (style.pointerEvents === "none") restyle(el, "pointer-events", "auto");
    if (style.contentVisibility === "auto") restyle(el, "content-visibility", "visible");
  }
  let judged;
  try {
    judged = elements.map((el) => judge(el, true));
    // The element read: the first a person sees (else the first), judged in full.
    const first = Math.max(judged.findIndex((j) => j.visible), 0);
    if (first < elements.length) judged[first] = { ...judge(elements[first], false), chosen: true };
  } catch (error) {
    restore();
    throw error;
  }
  const chosen = judged.findIndex((j) => j.chosen);
  const el = elements[chosen];

  function found() {
    const read = el === undefined ? null : {
      visible: judged[chosen].visible,
      hidden_by: judged[chosen].why,
      text: judged[chosen].text,
      attr: attrName === null ? null : el.getAttribute(attrName),
      html: el.outerHTML,
      whole_document: el === root || el === doc.body,
    };
    return { visible: judged.map((j) => j.visible), read };
  }

  // The text nodes seen in the element read, and their characters not yet judged by their
  // pixels: [node, start, end] of each that is not blank, in order.
  const readNodes = chosen >= 0 && judged[chosen].visible && judged[chosen].out
    ? judged[chosen].out.map(([, node]) => node).filter(Boolean) : [];
  let pending = readNodes.flatMap(characters);
  const ink = new Map(readNodes.map((node) => [node, { drawn: 0, size: 0, why: null }]));
  for (const [node] of pending.splice(MAX_GLYPHS)) {
    notDrawn(node, "beyond the part of the element captured");
  }
  // The elements whose ::before and ::after text is read with it: judged by the box of each,
  // captured with and without that text (its glyphs only), once the text nodes are.
  let pendingGenerated = chosen >= 0 && judged[chosen].visible && judged[chosen].generatedBy
    ? [...judged[chosen].generatedBy] : [];
  let generatedHidden = null;
  let windows = 0;
  let area = null;  // the glyph boxes of the current window: [node, rect]

  function characters(node) {
    const data = node.data;
    const list = [];
    for (let i = 0; i < data.length; i++) {
      const end = Math.min(i + (/[\ud800-\udbff]/.test(data[i]) ? 2 : 1), data.length);
      if (data.slice(i, end).trim()) list.push([node, i, end]);
      i = end - 1;
    }
    return list;
  }
  function boxOfCharacter([node, start, end]) {
    const range = doc.createRange();
    range.setStart(node, start);
    range.setEnd(node, end);
    return range.getBoundingClientRect();
  }
  function onScreen(r) {
    return r.left >= 0 && r.top >= 0 && r.right <= root.clientWidth && r.bottom <= root.clientHeight;
  }
  function notDrawn(node, why) {
    const verdict = ink.get(node);
    verdict.why = verdict.why || why;
  }

  // The next part of the text to capture: the first character not yet judged brought into
  // view (as the hit tests brought its lines), with every other one then on the screen; its
  // clip in the page's coordinates, or null when all are judged. Characters of no size (a
  // combining mark, a zero-width space) have no glyph to find.
  function nextArea() {
    while (pending.length > 0) {
      if (windows++ >= MAX_WINDOWS) {
        for (const [node] of pending) notDrawn(node, "beyond the part of the element captured");
        pending = [];
        break;
      }
      const [node] = pending[0];
      reveal(() => boxOfCharacter(pending[0]), node.parentElement);
      const boxes = pending.map((c) => [c, boxOfCharacter(c)]).filter(([, r]) => r.width * r.height >= 1);
      area = boxes.filter(([, r]) => onScreen(r)).map(([[owner], r]) => [owner, r]);
      const judgedNow = new Set(boxes.filter(([, r]) => onScreen(r)).map(([c]) => c));
      const sized = new Set(boxes.map(([c]) => c));
      pending = pending.filter((c) => sized.has(c) && !judgedNow.has(c));
      if (area.length === 0) {
        notDrawn(node, "out of reach of scrolling");
        pending = pending.filter(([owner]) => owner !== node);
        continue;
      }
      const left = Math.floor(Math.min(...area.map(([, r]) => r.left)));
      const top = Math.floor(Math.min(...area.map(([, r]) => r.top)));
      const right = Math.ceil(Math.max(...area.map(([, r]) => r.right)));
      const bottom = Math.ceil(Math.max(...area.map(([, r]) => r.bottom)));
      area.clip = { left, top };
      return clipOf(area, left, top, right, bottom);
    }
    return nextGenerated();
  }

  function clipOf(boxes, left, top, right, bottom) {
    boxes.clip = { left, top };
    return { x: left + window.scrollX, y: top + window.scrollY,
      width: right - left, height: bottom - top, scale: 1 };
  }

  // The next elements whose generated text is to be captured: the top of the first brought
  // into view, with every other one then on the screen; the part of the box of each on the
  // screen is where its text must be drawn.
  function nextGenerated() {
    const waiting = pendingGenerated;
    if (waiting.length === 0 || generatedHidden !== null) return null;
    if (windows++ >= MAX_WINDOWS) {
      generatedHidden = "beyond the part of the element captured";
      return null;
    }
    const [first] = waiting[0];
    reveal(() => {
      const r = first.getBoundingClientRect();
      return DOMRectReadOnly.fromRect({ x: r.left, y: r.top, width: r.width,
        height: Math.min(r.height, root.clientHeight) });
    }, first.parentElement);
    const visiblePart = (r) => DOMRectReadOnly.fromRect({
      x: Math.max(r.left, 0), y: Math.max(r.top, 0),
      width: Math.min(r.right, root.clientWidth) - Math.max(r.left, 0),
      height: Math.min(r.bottom, root.clientHeight) - Math.max(r.top, 0) });
    const now = waiting.map(([owner, characters]) => ({ owner, characters,
      rect: owner.getBoundingClientRect() }))
      .filter(({ owner, rect }) => owner === first || onScreen(rect))
      .map((g) => ({ ...g, rect: visiblePart(g.rect) }))
      .filter(({ rect }) => rect.width >= 1 && rect.height >= 1);
    if (now.length === 0) {
      generatedHidden = "out of reach of scrolling";
      return null;
    }
    pendingGenerated = waiting.filter(([owner]) => !now.some((g) => g.owner === owner));
    area = [];
    area.generated = now;
    return clipOf(area,
      Math.floor(Math.min(...now.map(({ rect }) => rect.left))),
      Math.floor(Math.min(...now.map(({ rect }) => rect.top))),
      Math.ceil(Math.max(...now.map(({ rect }) => rect.right))),
      Math.ceil(Math.max(...now.map(({ rect }) => rect.bottom))));
  }

  // Generated text is made bare by a rule of the observer's own, adopted by the document, on
  // an attribute of a name the page cannot guess, removed by finish().
  const marker = `data-claim-${Math.random().toString(36).slice(2)}`;
  let rules = null;
  function markGenerated(owner, state) {
    if (rules === null) {
      rules = new CSSStyleSheet();
      rules.replaceSync(
        `[${marker}]::before, [${marker}]::after { transition: none !important; }
         [${marker}="bare"]::before, [${marker}="bare"]::after {
           -webkit-text-fill-color: transparent !important;
           -webkit-text-stroke-color: transparent !important; text-shadow: none !important; }`);
      doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, rules];
    }
    owner.setAttribute(marker, state);
  }

  // The glyphs of the text read made transparent, and nothing else: colour stays (borders,
  // shadows and generated boxes take currentColor from it), decorations stay (an underline is
  // no word), only the fill, the stroke and the shadow of the glyphs go. A transition on them
  // would keep the old glyphs on screen, so the owners' transitions are off until finish().
  function owners() {
    return new Set(readNodes.map((node) => node.parentElement));
  }
  // Text painted by a background clipped to it (background-clip: text, the owner's or an
  // ancestor's) has that background for its glyphs: on such a box the background is painted
  // nowhere else, so it goes too.
  let glyphless = [];
  function hideText() {
    if (area.generated) {
      for (const { owner } of area.generated) markGenerated(owner, "bare");
      return;
    }
    const painted = new Set();
    for (const owner of owners()) {
      restyle(owner, "transition", "none");
      restyle(owner, "-webkit-text-fill-color", "transparent");
      restyle(owner, "-webkit-text-stroke-color", "transparent");
      restyle(owner, "text-shadow", "none");
      for (let at = owner; at; at = at.parentElement) {
        if (css(at).backgroundClip.includes("text")) painted.add(at);
      }
    }
    for (const box of painted) {
      restyle(box, "transition", "none");
      restyle(box, "background-image", "none");
      restyle(box, "background-color", "transparent");
    }
    glyphless = [...owners(), ...painted];
  }
  function showText() {
    if (area.generated) {
      for (const { owner } of area.generated) markGenerated(owner, "shown");
      return;
    }
    for (const el of glyphless) {
      putBack(el);
      el.style.setProperty("transition", "none", "important");
    }
  }

  async function pixels(png) {
    const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
    const image = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
    const canvas = new OffscreenCanvas(image.width, image.height);
    const context = canvas.getContext("2d", { willReadFrequently: true });
    context.drawImage(image, 0, 0);
    return context.getImageData(0, 0, image.width, image.height);
  }

  const LINEAR = Array.from({ length: 256 }, (_, c) => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  function pixelsDiffer(a, b, at) {
    const lum = (d) => 0.2126 * LINEAR[d[at]] + 0.7152 * LINEAR[d[at + 1]] + 0.0722 * LINEAR[d[at + 2]];
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05) >= MIN_CONTRAST;
  }
  // How many pixels of box ``r`` (on screen) differ between two captures of the clip.
  function changed(a, b, r) {
    const { left, top } = area.clip;
    const x0 = Math.max(Math.floor(r.left) - left, 0);
    const y0 = Math.max(Math.floor(r.top) - top, 0);
    const x1 = Math.min(Math.ceil(r.right) - left, a.width);
    const y1 = Math.min(Math.ceil(r.bottom) - top, a.height);
    let count = 0;
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        if (pixelsDiffer(a.data, b.data, (y * a.width + x) * 4)) count++;
      }
    }
    return count;
  }

  // Each glyph of the window judged on the captures with the text (shown, then shown again)
  // and without it (bare): what it changed is added to its node's ink.
  async function judgeDrawn(withText, withoutText, withTextAgain) {
    const [shown, bare, again] = await Promise.all(
      [withText, withoutText, withTextAgain].map(pixels));
    for (const { rect, characters } of area.generated || []) {
      if (changed(shown, again, rect) > 0) {
        generatedHidden = generatedHidden || "changing on the screen while it was read";
      } else if (changed(shown, bare, rect) < MIN_GLYPH_PIXELS * characters) {
        generatedHidden = generatedHidden || "not drawn on the screen (covered, masked or shrunk)";
      }
    }
    if (area.generated) return;
    for (const [node, r] of area) {
      const verdict = ink.get(node);
      if (changed(shown, again, r) > 0) notDrawn(node, "changing on the screen while it was read");
      const drawn = changed(shown, bare, r);
      if (drawn < MIN_GLYPH_PIXELS) notDrawn(node, "not drawn on the screen (covered, masked or shrunk)");
      verdict.drawn += drawn;
      verdict.size += r.width * r.height;
    }
  }

  // The element read keeps the text of the nodes drawn; with none, it shows nothing.
  function keepDrawn() {
    const read = judged[chosen];
    let hidden = null;
    const out = read.out.filter(([, node]) => {
      if (node === null) return true;
      const { drawn, size, why } = ink.get(node);
      const reason = why || (size === 0 ? "of no size" : null)
        || (drawn < MIN_INK * size ? "not drawn on the screen (covered, masked or shrunk)" : null);
      hidden = hidden || reason;
      return reason === null;
    });
    const text = joined(out);
    judged[chosen] = text
      ? { ...read, text }
      : { ...read, text, visible: false, why: `its text is ${hidden}` };
  }

  // The page put back as it was, then what was read of it.
  // Generated text is read with the element's own, in its place: when it is not drawn, what
  // the element shows cannot be told, and it is not visible.
  function finish() {
    if (readNodes.length > 0) keepDrawn();
    if (generatedHidden !== null) {
      judged[chosen] = { ...judged[chosen], visible: false, why: `its generated text is ${generatedHidden}` };
    }
    restore();
    if (rules !== null) {
      for (const owner of doc.querySelectorAll(`[${marker}]`)) owner.removeAttribute(marker);
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((sheet) => sheet !== rules);
    }
    return found();
  }

  return { nextArea, hideText, showText, judgeDrawn, finish };
}
