"""The browser map's page: HTML, CSS and script (see :mod:`locimem.viz.map`).

``@@TITLE@@`` and ``@@FRAME@@`` (HTML-escaped), ``@@CSP@@`` (the script's hash),
``@@LEGEND@@``, ``@@DATA@@`` (script-safe JSON) and ``@@SCRIPT@@`` are filled in, in one pass, by
:func:`locimem.viz.map.render_map_html`. The script draws only with ``createElementNS``,
``setAttribute`` and ``textContent``: nothing from the data is parsed as markup.
"""

from __future__ import annotations

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("locimem-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var STATUSES = ["confirmed", "tentative", "doubted", "lost"];
  var svg = document.getElementById("map");
  var layers = document.getElementById("layers");
  var slider = document.getElementById("slider");
  var search = document.getElementById("search");
  var frames = data.frames, cam = data.camera;
  var V = data.view, E = V.extent, M = V.margins, W = V.canvas[0], H = V.canvas[1];
  var scale = (W - M[0] - M[2]) / (E[2] - E[0]);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  var state = {k: 0, query: "", hidden: {}, selected: null, hover: null};
  var current = {}, drawn = {}, labelOf = {}, rowOf = {};
  function sx(x) { return M[0] + (x - E[0]) * scale; }
  function sy(y) { return M[1] + (E[3] - y) * scale; }
  function f2(v) { return Number(v).toFixed(2); }
  function metres(v) { return String(Number(v.toFixed(3))); }
  function when(t) {  // a time for a person: ISO 8601 (UTC, to the second) or seconds
    if (data.unix) { return new Date(Math.floor(t) * 1000).toISOString().slice(0, 19) + "Z"; }
    return "t=" + t.toFixed(1) + " s";
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (attrs[k] !== null) { e.setAttribute(k, String(attrs[k])); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function html(name, cls, text, parent) {
    var e = document.createElement(name);
    if (cls) { e.className = cls; }
    if (text !== null) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function clear(e) { while (e.firstChild) { e.removeChild(e.firstChild); } }
  function text(parent, x, y, s, cls) {
    var t = el("text", {x: x.toFixed(1), y: y.toFixed(1), "class": cls}, parent);
    t.textContent = s;
    return t;
  }
  function at(track, k) {
    var s = null;
    for (var i = 0; i < track.length && track[i][0] <= k; i++) { s = track[i][1]; }
    return s;
  }
  function cameraIndex(t) {  // the last camera point at or before t (-1: none)
    var lo = 0, hi = cam.t.length - 1, j = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (cam.t[mid] <= t) { j = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return j;
  }
  function seenAt(o, t) { return o.last_seen === null ? t : o.last_seen; }
  function details(id, o, t) {
    var votes = o.votes.map(function (v) { return v[0] + " " + v[1] + "%"; }).join(", ");
    var lines = [o.label + " #" + id + " (" + o.level + ")",
                 o.status + ", confidence " + f2(o.confidence),
                 "room: " + (o.room === null ? "none" : o.room),
                 "at (" + f2(o.x) + ", " + f2(o.y) + ", " + f2(o.z) + ") m, size " +
                   f2(o.sx) + " x " + f2(o.sy) + " x " + f2(o.sz) + " m",
                 "first seen " + when(o.first_seen) + ", last seen " + when(seenAt(o, t))];
    if (o.seen_from !== null) {
      lines.push("last seen from the robot at (" + f2(o.seen_from[0]) + ", " +
                 f2(o.seen_from[1]) + ") m");
    }
    lines.push("label votes: " + votes, "source: " + o.source);
    return lines.join("\n");
  }
  function drawGrid() {
    var grid = document.getElementById("grid"), g = V.grid_m;
    el("rect", {"class": "plot", x: M[0], y: M[1], width: (W - M[0] - M[2]).toFixed(1),
                height: (H - M[1] - M[3]).toFixed(1)}, grid);
    for (var i = Math.ceil(E[0] / g - 1e-9); i * g <= E[2] + 1e-9; i++) {
      var x = sx(i * g);
      el("line", {"class": i === 0 ? "grid origin" : "grid", "data-axis": "x",
                  "data-m": metres(i * g), x1: x.toFixed(1), x2: x.toFixed(1),
                  y1: M[1], y2: (H - M[3]).toFixed(1)}, grid);
      text(grid, x, H - M[3] + 16, metres(i * g) + " m", "axis-label x-label");
    }
    for (var j = Math.ceil(E[1] / g - 1e-9); j * g <= E[3] + 1e-9; j++) {
      var y = sy(j * g);
      el("line", {"class": j === 0 ? "grid origin" : "grid", "data-axis": "y",
                  "data-m": metres(j * g), x1: M[0], x2: (W - M[2]).toFixed(1),
                  y1: y.toFixed(1), y2: y.toFixed(1)}, grid);
      text(grid, M[0] - 5, y + 4, metres(j * g) + " m", "axis-label y-label");
    }
    var bar = el("g", {id: "scalebar", "data-m": metres(V.scale_m)},
                 document.getElementById("overlay"));
    var len = V.scale_m * scale, x1 = W - M[2] - 18, x0 = x1 - len, yb = H - M[3] - 16;
    el("rect", {"class": "scale-bg", x: (x0 - 8).toFixed(1), y: (yb - 20).toFixed(1),
                width: (len + 16).toFixed(1), height: 30}, bar);
    el("path", {"class": "scale-bar", "data-px": len.toFixed(1),
                d: "M" + x0.toFixed(1) + "," + (yb - 5) + " V" + yb + " H" + x1.toFixed(1) +
                   " V" + (yb - 5)}, bar);
    text(bar, (x0 + x1) / 2, yb - 8, metres(V.scale_m) + " m", "scale-label");
  }
  function drawRoom(name, r, parent) {
    var g = el("g", {"class": "room", "data-name": name}, parent);
    var pts = r.polygon.map(function (p) { return sx(p[0]).toFixed(1) + "," +
                                                  sy(p[1]).toFixed(1); });
    el("polygon", {points: pts.join(" ")}, g);
    var left = Infinity, top = -Infinity;
    r.polygon.forEach(function (p) { left = Math.min(left, p[0]); top = Math.max(top, p[1]); });
    text(g, sx(left) + 6, sy(top) + 17, name, "room-name");
    placed.push(box(sx(left) + 6, sy(top) + 17, name, "start", 15));
    el("title", {}, g).textContent = "room " + name + (r.connected.length ?
      "\nlinked to: " + r.connected.join(", ") : "");
  }
  function hoverable(e, id) {
    e.addEventListener("mouseenter", function () { state.hover = id; applyFocus(); });
    e.addEventListener("mouseleave", function () {
      if (state.hover === id) { state.hover = null; applyFocus(); }
    });
    e.addEventListener("click", function () {
      state.selected = state.selected === id ? null : id;
      applyFocus();
    });
  }
  var placed = [];  // the boxes of the labels drawn so far, to keep the next off them
  function box(x, y, s, anchor, size) {
    var w = s.length * size * 0.56, x0 = anchor === "start" ? x : anchor === "end" ? x - w :
      x - w / 2;
    return [x0, y - size, x0 + w, y + 3];
  }
  function free(b) {
    return placed.every(function (p) {
      return b[2] < p[0] || b[0] > p[2] || b[3] < p[1] || b[1] > p[3];
    });
  }
  function placeLabel(labels, cx, cy, rad, name) {
    // right of the dot, else left, above or below: the first place no label holds yet
    var tries = [[cx + rad + 3, cy + 4, "start"], [cx - rad - 3, cy + 4, "end"],
                 [cx, cy - rad - 4, "middle"], [cx, cy + rad + 13, "middle"]];
    var pick = tries[0];
    for (var i = 0; i < tries.length; i++) {
      if (free(box(tries[i][0], tries[i][1], name, tries[i][2], 12))) { pick = tries[i]; break; }
    }
    placed.push(box(pick[0], pick[1], name, pick[2], 12));
    var t = text(labels, pick[0], pick[1], name, "label item-label");
    t.setAttribute("text-anchor", pick[2]);
    return t;
  }
  function drawObject(id, o, t, parent, labels) {
    var cls = "obj " + o.level + " status-" + o.status;
    var g = el("g", {"class": cls, id: "obj-" + id, "data-id": id, "data-label": o.label,
                     "data-level": o.level, "data-status": o.status,
                     "data-confidence": f2(o.confidence), "data-x": f2(o.x),
                     "data-y": f2(o.y), "data-z": f2(o.z),
                     "data-room": o.room === null ? "" : o.room}, parent);
    var cx = sx(o.x), cy = sy(o.y), name = o.label + (o.status === "lost" ? " (lost)" : "");
    var opacity = o.status === "lost" ? 0.35 : 0.35 + 0.6 * o.confidence, label;
    if (o.level === "furniture") {
      opacity = opacity * 0.45;
      var w = o.sx * scale, h = o.sy * scale, deg = -o.yaw * 180 / Math.PI;
      el("rect", {x: (cx - w / 2).toFixed(1), y: (cy - h / 2).toFixed(1), width: w.toFixed(1),
                  height: h.toFixed(1), fill: o.color, "fill-opacity": opacity.toFixed(2),
                  transform: "rotate(" + deg.toFixed(1) + " " + cx.toFixed(1) + " " +
                             cy.toFixed(1) + ")"}, g);
      var top = cy - Math.abs(w * Math.sin(o.yaw)) / 2 - Math.abs(h * Math.cos(o.yaw)) / 2;
      label = text(labels, cx, top + 13, name, "label furniture-label");
      placed.push(box(cx, top + 13, name, "middle", 11));
    } else {
      var rad = Math.max(4, Math.min(o.sx, o.sy) * scale / 2);
      el("circle", {"class": "halo", cx: cx.toFixed(1), cy: cy.toFixed(1),
                    r: (rad + 7).toFixed(1)}, g);
      el("circle", {"class": "dot", cx: cx.toFixed(1), cy: cy.toFixed(1), r: rad.toFixed(1),
                    fill: o.color, "fill-opacity": opacity.toFixed(2)}, g);
      label = placeLabel(labels, cx, cy, rad, name);
    }
    label.setAttribute("data-id", id);
    el("title", {}, g).textContent = details(id, o, t);
    hoverable(g, id);
    drawn[id] = g;
    labelOf[id] = label;
  }
  function drawRobot(t, parent, top) {  // the path under the items, the robot over them
    var j = cameraIndex(t);
    if (j < 0) { return; }
    var pts = [];
    for (var i = 0; i <= j; i++) {
      pts.push(sx(cam.x[i]).toFixed(1) + "," + sy(cam.y[i]).toFixed(1));
    }
    el("polyline", {id: "robot-path", "data-n": j + 1, points: pts.join(" ")}, parent);
    var x = sx(cam.x[j]), y = sy(cam.y[j]), a = cam.yaw[j];
    var g = el("g", {id: "robot", "data-x": f2(cam.x[j]), "data-y": f2(cam.y[j]),
                     "data-t": String(cam.t[j])}, top);
    var tip = [x + 16 * Math.cos(a), y - 16 * Math.sin(a)];
    var l = [x + 7 * Math.cos(a + 2.4), y - 7 * Math.sin(a + 2.4)];
    var r = [x + 7 * Math.cos(a - 2.4), y - 7 * Math.sin(a - 2.4)];
    el("path", {"class": "robot-heading", d: "M" + l[0].toFixed(1) + "," + l[1].toFixed(1) +
                " L" + tip[0].toFixed(1) + "," + tip[1].toFixed(1) + " L" + r[0].toFixed(1) +
                "," + r[1].toFixed(1) + " z"}, g);
    el("circle", {"class": "robot-body", cx: x.toFixed(1), cy: y.toFixed(1), r: 6}, g);
    el("title", {}, g).textContent = "the robot (its camera) at (" + f2(cam.x[j]) + ", " +
      f2(cam.y[j]) + ") m, " + when(cam.t[j]);
  }
  function matches(id, o) {
    var q = state.query.trim().toLowerCase();
    if (q.charAt(0) === "#") { return id === q.slice(1).trim(); }
    return o.label.toLowerCase().indexOf(q) >= 0 || id === q;
  }
  function setClass(e, cls, on) { if (e) { e.classList.toggle(cls, on); } }
  function applyFocus() {
    var searching = state.query.trim() !== "", matched = [], shown = 0, total = 0;
    Object.keys(current).forEach(function (id) {
      var o = current[id], hidden = state.hidden[o.status] === true;
      var match = searching && matches(id, o);
      var focus = id === state.hover || id === state.selected;
      if (match && !hidden) { matched.push(id); }
      total += 1;
      shown += hidden || (searching && !match) ? 0 : 1;
      [drawn[id], labelOf[id], rowOf[id]].forEach(function (e) {
        setClass(e, "hidden", hidden || (e === rowOf[id] && searching && !match && !focus));
        setClass(e, "dim", searching && !match && !focus);
        setClass(e, "highlight", (match || focus) && !hidden);
        setClass(e, "selected", id === state.selected);
      });
    });
    document.body.setAttribute("data-query", state.query);
    var sight = document.getElementById("sight");
    clear(sight);
    var focusIds = matched.length <= 12 ? matched.slice() : [];
    [state.selected, state.hover].forEach(function (id) {
      if (id !== null && current[id] && focusIds.indexOf(id) < 0) { focusIds.push(id); }
    });
    focusIds.forEach(function (id) {
      var o = current[id];
      if (o.seen_from === null || state.hidden[o.status]) { return; }
      var fx = sx(o.seen_from[0]), fy = sy(o.seen_from[1]);
      el("line", {"class": "sight", "data-id": id, x1: fx.toFixed(1), y1: fy.toFixed(1),
                  x2: sx(o.x).toFixed(1), y2: sy(o.y).toFixed(1)}, sight);
      el("circle", {"class": "seen-from", "data-id": id, "data-x": f2(o.seen_from[0]),
                    "data-y": f2(o.seen_from[1]), cx: fx.toFixed(1), cy: fy.toFixed(1),
                    r: 6}, sight);
    });
    var count = document.getElementById("count");
    count.textContent = shown + " of " + total + " objects shown" +
      (searching ? " (" + matched.length + " match)" : "");
    var picks = [];  // the hovered, the selected, then the search's matches
    [state.hover, state.selected].concat(matched).forEach(function (id) {
      if (id !== null && current[id] && picks.indexOf(id) < 0) { picks.push(id); }
    });
    showInfo(picks.slice(0, 3), picks.length);
  }
  function showInfo(ids, n) {
    var info = document.getElementById("info");
    clear(info);
    info.setAttribute("data-ids", ids.join(" "));
    if (!ids.length) {
      html("p", "hint", "Search, or hover or click an object, to see where it is and " +
           "where the robot was when it last saw it.", info);
      return;
    }
    ids.forEach(function (id) { describe(id, html("div", "info-obj", null, info)); });
    if (n > ids.length) { html("p", "hint", "and " + (n - ids.length) + " more", info); }
  }
  function describe(id, info) {
    info.setAttribute("data-id", id);
    var o = current[id], t = frames[state.k].t;
    html("p", "info-head", o.label + " #" + id, info);
    html("p", "info-status", o.status + ", confidence " + f2(o.confidence), info);
    html("p", "info-place", "at (" + f2(o.x) + ", " + f2(o.y) + ") m, " +
         (o.room === null ? "in no room" : "in " + o.room), info);
    html("p", "info-seen", "last seen " + when(seenAt(o, t)) +
         (o.last_seen === null ? " (at this frame)" : ""), info);
    if (o.seen_from !== null) {
      var d = Math.hypot(o.x - o.seen_from[0], o.y - o.seen_from[1]);
      html("p", "info-from", "from the robot at (" + f2(o.seen_from[0]) + ", " +
           f2(o.seen_from[1]) + ") m, " + d.toFixed(1) + " m away", info);
    } else {
      html("p", "info-from", "(no camera pose for that scan)", info);
    }
  }
  function drawList(states) {
    var list = document.getElementById("objlist");
    clear(list);
    rowOf = {};
    states.slice().sort(function (a, b) {
      return a[1].label.localeCompare(b[1].label) || Number(a[0]) - Number(b[0]);
    }).forEach(function (s) {
      var id = s[0], o = s[1];
      var li = html("li", "obj-row status-" + o.status, null, list);
      li.setAttribute("data-id", id);
      li.setAttribute("data-status", o.status);
      var sw = html("span", "swatch", null, li);
      sw.style.background = o.color;
      html("span", "row-label", o.label + " #" + id, li);
      html("span", "row-meta", o.status + (o.room === null ? "" : ", " + o.room), li);
      hoverable(li, id);
      rowOf[id] = li;
    });
  }
  function render(k) {
    clear(layers);
    var events = document.getElementById("events");
    clear(events);
    document.body.setAttribute("data-frame", String(k));
    current = {}; drawn = {}; labelOf = {}; placed = [];
    if (!frames.length) {
      document.getElementById("time").textContent = "nothing recorded";
      return;
    }
    state.k = k;
    var roomLayer = el("g", {id: "rooms"}, layers);
    Object.keys(data.rooms).sort().forEach(function (name) {
      var r = at(data.rooms[name], k);
      if (r !== null) { drawRoom(name, r, roomLayer); }
    });
    var states = [];
    Object.keys(data.objects).forEach(function (id) {
      var o = at(data.objects[id], k);
      if (o !== null) { states.push([id, o]); current[id] = o; }
    });
    states.sort(function (a, b) {  // furniture under items, bigger under smaller
      var fa = a[1].level === "furniture" ? 0 : 1, fb = b[1].level === "furniture" ? 0 : 1;
      return fa - fb || b[1].sx * b[1].sy - a[1].sx * a[1].sy || a[0] - b[0];
    });
    var furniture = el("g", {id: "furniture"}, layers);
    var pathLayer = el("g", {id: "path"}, layers);
    var objLayer = el("g", {id: "objects"}, layers);
    var moveLayer = el("g", {id: "moves"}, layers);
    el("g", {id: "sight"}, layers);
    var robotLayer = el("g", {id: "robot-now"}, layers);
    var labelLayer = el("g", {id: "labels"}, layers);
    var fr = frames[k];
    drawRobot(fr.t, pathLayer, robotLayer);
    states.forEach(function (s) {
      drawObject(s[0], s[1], fr.t, s[1].level === "furniture" ? furniture : objLayer,
                 labelLayer);
    });
    var latest = {};
    data.moves.forEach(function (m) { if (m[0] <= k) { latest[m[1]] = m; } });
    Object.keys(latest).forEach(function (id) {
      if (!current[id]) { return; }
      var m = latest[id], now = m[0] === k;
      el("line", {"class": now ? "move current" : "move", id: "move-" + id, "data-id": id,
                  "data-frame": m[0], x1: sx(m[2][0]).toFixed(1), y1: sy(m[2][1]).toFixed(1),
                  x2: sx(m[3][0]).toFixed(1), y2: sy(m[3][1]).toFixed(1),
                  "marker-end": "url(#arrow)"}, moveLayer);
    });
    document.body.setAttribute("data-t", String(fr.t));
    document.getElementById("time").textContent =
      (data.unix ? when(fr.t) + "   (t = " + fr.t.toFixed(1) + " s, frame " :
                   "t = " + fr.t.toFixed(1) + " s   (frame ") + (k + 1) + " of " +
      frames.length + ")";
    fr.events.forEach(function (e) {
      var li = html("li", null, e.text, events);
      li.setAttribute("data-kind", e.kind);
      li.setAttribute("data-id", String(e.id));
    });
    if (!fr.events.length) {
      html("li", null, "(no events: the memory as of its latest scan)", events);
    }
    drawList(states);
    slider.value = String(k);
    applyFocus();
  }
  function readHash() {  // #frame=3 or #t=12.5, &q=mug, &hide=lost,tentative, &select=3
    var out = {};
    window.location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i < 0) { return; }
      try { out[part.slice(0, i)] = decodeURIComponent(part.slice(i + 1)); } catch (err) {}
    });
    return out;
  }
  function frameOf(h) {
    var last = frames.length - 1, num = /^-?[0-9.]+$/;
    if (h.frame !== undefined && num.test(h.frame)) {
      return Math.max(0, Math.min(last, Math.floor(Number(h.frame))));
    }
    if (h.t !== undefined && num.test(h.t)) {
      var k = 0, v = Number(h.t);
      for (var i = 0; i < frames.length; i++) { if (frames[i].t <= v) { k = i; } }
      return k;
    }
    return last;
  }
  function fromHash() {  // set the controls as a person would: the same events run
    var h = readHash(), hide = (h.hide || "").split(",");
    state.selected = h.select === undefined || h.select === "" ? null : h.select;
    state.hover = null;
    render(frameOf(h));
    search.value = h.q === undefined ? "" : h.q;
    search.dispatchEvent(new Event("input"));
    STATUSES.forEach(function (s) {
      var box = document.getElementById("show-" + s);
      box.checked = hide.indexOf(s) < 0;
      box.dispatchEvent(new Event("change"));
    });
  }
  drawGrid();
  slider.max = String(Math.max(frames.length - 1, 0));
  slider.addEventListener("input", function () { render(Number(slider.value)); });
  search.addEventListener("input", function () { state.query = search.value; applyFocus(); });
  STATUSES.forEach(function (s) {
    var box = document.getElementById("show-" + s);
    box.addEventListener("change", function () { state.hidden[s] = !box.checked; applyFocus(); });
  });
  window.addEventListener("hashchange", fromHash);
  var timer = null, play = document.getElementById("play");
  play.addEventListener("click", function () {
    if (timer !== null) { clearInterval(timer); timer = null; play.textContent = "play";
                          return; }
    play.textContent = "pause";
    if (Number(slider.value) >= frames.length - 1) { render(0); }
    timer = setInterval(function () {
      var k = Number(slider.value) + 1;
      if (k >= frames.length) { clearInterval(timer); timer = null; play.textContent = "play";
                                return; }
      render(k);
    }, 700);
  });
  fromHash();
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
  content="default-src 'none'; style-src 'unsafe-inline'; script-src '@@CSP@@'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 12px 16px; color: #222;
         background: #fafafa; }
  h1 { font-size: 17px; margin: 0 0 6px; }
  #map-frame { margin: 0 0 6px; color: #555; font-size: 12.5px; }
  #controls { display: flex; gap: 10px; align-items: center; margin: 4px 0 8px; }
  #slider { flex: 1; max-width: 640px; }
  #time { font-variant-numeric: tabular-nums; min-width: 190px; }
  #main { display: flex; gap: 14px; align-items: flex-start; }
  #map { flex: 1 1 auto; width: 100%; max-width: 1000px; min-width: 0; background: #fff;
         border: 1px solid #ccc; display: block; }
  #side { flex: 0 0 290px; display: flex; flex-direction: column; gap: 8px; }
  #search { font: inherit; padding: 4px 6px; width: 100%; box-sizing: border-box; }
  #filters label { margin-right: 8px; white-space: nowrap; }
  #count { color: #555; font-size: 12.5px; }
  #info { background: #fff; border: 1px solid #ccc; padding: 6px 8px; min-height: 70px; }
  #info p { margin: 0 0 2px; }
  #info .info-obj + .info-obj { border-top: 1px solid #ddd; margin-top: 4px; padding-top: 4px; }
  #info .info-head { font-weight: 600; font-size: 15px; }
  #info .hint { color: #666; }
  #info .info-from { color: #6a1b9a; }
  #objlist { list-style: none; margin: 0; padding: 0; max-height: 460px; overflow-y: auto;
             border: 1px solid #ccc; background: #fff; }
  .obj-row { padding: 2px 6px; cursor: pointer; display: flex; gap: 6px;
             align-items: baseline; }
  .obj-row .swatch { display: inline-block; width: 10px; height: 10px;
                     border: 1px solid #333; flex: none; }
  .obj-row .row-meta { color: #666; font-size: 12px; margin-left: auto; }
  .obj-row.highlight { background: #fde7f1; }
  .obj-row.selected { outline: 2px solid #d0006f; }
  .obj-row.hidden { display: none; }
  .plot { fill: #fff; }
  .grid { stroke: #e3e3e3; stroke-width: 1; }
  .grid.origin { stroke: #c4c4c4; }
  .axis-label { font-size: 12px; fill: #666; }
  .x-label { text-anchor: middle; }
  .y-label { text-anchor: end; }
  .scale-bg { fill: #fff; fill-opacity: 0.85; }
  .scale-bar { stroke: #222; stroke-width: 2; fill: none; }
  .scale-label { font-size: 12px; text-anchor: middle; fill: #222; }
  .room polygon { fill: #eef2f7; fill-opacity: 0.8; stroke: #5a6b80; stroke-width: 2.5; }
  .room-name { font-size: 15px; fill: #5a6b80; font-weight: 600; paint-order: stroke;
               stroke: #eef2f7; stroke-width: 4px; }
  .obj { cursor: pointer; }
  .obj rect, .obj .dot { stroke: #333; stroke-width: 1.2; }
  .obj .halo { fill: none; stroke: none; }
  .obj.status-tentative rect, .obj.status-tentative .dot { stroke-dasharray: 3 2; }
  .obj.status-lost rect, .obj.status-lost .dot { stroke: #888; stroke-dasharray: 4 3; }
  .obj.highlight .halo { stroke: #d0006f; stroke-width: 3; }
  .obj.highlight rect { stroke: #d0006f; stroke-width: 3; }
  .obj.dim, .label.dim { opacity: 0.25; }
  .obj.hidden, .label.hidden { display: none; }
  .label { font-size: 12px; fill: #222; paint-order: stroke; stroke: #fff;
           stroke-width: 3px; pointer-events: none; }
  .label.highlight { font-weight: 700; fill: #a0004f; }
  .furniture-label { text-anchor: middle; fill: #555; font-size: 11px; font-style: italic; }
  .move { stroke: #1f5fbf; stroke-width: 2; fill: none; opacity: 0.45; }
  .move.current { opacity: 1; stroke-width: 3; }
  #robot-path { fill: none; stroke: #7b3fb5; stroke-width: 2; stroke-opacity: 0.55;
                stroke-linejoin: round; }
  .robot-body { fill: #7b3fb5; stroke: #fff; stroke-width: 1.5; }
  .robot-heading { fill: #7b3fb5; fill-opacity: 0.7; }
  .sight { stroke: #d0006f; stroke-width: 2; stroke-dasharray: 6 4; }
  .seen-from { fill: #fff; stroke: #d0006f; stroke-width: 3; }
  #events { margin: 6px 0; padding-left: 20px; font-family: ui-monospace, monospace;
            font-size: 12.5px; }
  #legend span { display: inline-block; margin-right: 12px; }
  #legend i { display: inline-block; width: 11px; height: 11px; border: 1px solid #333;
              margin-right: 4px; vertical-align: -1px; }
  #legend i.robot-swatch { background: #7b3fb5; border-radius: 6px; border-color: #7b3fb5; }
  #legend i.sight-swatch { border: 2px dashed #d0006f; border-radius: 6px; }
</style>
</head>
<body>
<h1>@@TITLE@@</h1>
<p id="map-frame">@@FRAME@@</p>
<div id="controls">
  <button id="play" type="button">play</button>
  <input id="slider" type="range" min="0" max="0" step="1" value="0"
    aria-label="time: the memory as of each event">
  <span id="time"></span>
</div>
<div id="main">
<svg id="map" xmlns="http://www.w3.org/2000/svg" role="img"
  aria-label="the memory seen from above">
  <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7"
    markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"
    fill="#1f5fbf"/></marker></defs>
  <g id="grid"></g>
  <g id="layers"></g>
  <g id="overlay"></g>
</svg>
<div id="side">
  <input id="search" type="search" placeholder="find: a label, or #id"
    aria-label="find objects by label or #id" autocomplete="off">
  <div id="filters">
    <label><input type="checkbox" id="show-confirmed" checked> confirmed</label>
    <label><input type="checkbox" id="show-tentative" checked> tentative</label>
    <label><input type="checkbox" id="show-doubted" checked> doubted</label>
    <label><input type="checkbox" id="show-lost" checked> lost</label>
  </div>
  <div id="count"></div>
  <div id="info"></div>
  <ol id="objlist" aria-label="the objects at this time"></ol>
</div>
</div>
<div id="legend">@@LEGEND@@</div>
<ul id="events"></ul>
<script type="application/json" id="locimem-data">@@DATA@@</script>
<script>@@SCRIPT@@</script>
</body>
</html>
"""
