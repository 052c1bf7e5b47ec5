"""The browser map's page: HTML, CSS and script (see :mod:`locimem.viz.map`).

``@@TITLE@@`` (HTML-escaped), ``@@CSP@@`` (the script's hash) and ``@@DATA@@`` (script-safe
JSON) are filled in by :func:`locimem.viz.map.render_map_html`. The script draws only with
``createElementNS``, ``setAttribute`` and ``textContent``: nothing from the data is parsed as
markup.
"""

from __future__ import annotations

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("locimem-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var svg = document.getElementById("map");
  var layers = document.getElementById("layers");
  var slider = document.getElementById("slider");
  var frames = data.frames;
  var b = data.bounds, pad = 0.4;
  var x0 = b[0] - pad, y0 = b[1] - pad, x1 = b[2] + pad, y1 = b[3] + pad;
  var W = 1000, scale = W / Math.max(x1 - x0, 0.001);
  var H = Math.max((y1 - y0) * scale, 120);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H.toFixed(1));
  function sx(x) { return (x - x0) * scale; }
  function sy(y) { return (y1 - y) * scale; }
  function f2(v) { return Number(v).toFixed(2); }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (attrs[k] !== null) { e.setAttribute(k, String(attrs[k])); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
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
  function details(id, o, t) {
    var votes = o.votes.map(function (v) { return v[0] + " " + v[1] + "%"; }).join(", ");
    var seen = o.last_seen === null ? t : o.last_seen;
    return [o.label + " #" + id + " (" + o.level + ")",
            o.status + ", confidence " + f2(o.confidence),
            "room: " + (o.room === null ? "none" : o.room),
            "at (" + f2(o.x) + ", " + f2(o.y) + ", " + f2(o.z) + ") m, size " +
              f2(o.sx) + " x " + f2(o.sy) + " x " + f2(o.sz) + " m",
            "first seen t=" + o.first_seen.toFixed(1) + " s, last seen t=" +
              seen.toFixed(1) + " s", "label votes: " + votes,
            "source: " + o.source].join("\n");
  }
  function drawRoom(name, r, parent) {
    var g = el("g", {"class": "room", "data-name": name}, parent);
    var pts = r.polygon.map(function (p) { return sx(p[0]).toFixed(1) + "," +
                                                  sy(p[1]).toFixed(1); });
    el("polygon", {points: pts.join(" ")}, g);
    var cx = 0, top = -Infinity;
    r.polygon.forEach(function (p) { cx += p[0]; top = Math.max(top, p[1]); });
    text(g, sx(cx / r.polygon.length), sy(top) + 18, name, "room-name");
    el("title", {}, g).textContent = "room " + name + (r.connected.length ?
      "\nlinked to: " + r.connected.join(", ") : "");
  }
  function drawObject(id, o, t, parent, labels) {
    var cls = "obj " + o.level + " status-" + o.status;
    var g = el("g", {"class": cls, id: "obj-" + id, "data-id": id, "data-label": o.label,
                     "data-level": o.level, "data-status": o.status,
                     "data-confidence": f2(o.confidence), "data-x": f2(o.x),
                     "data-y": f2(o.y), "data-z": f2(o.z),
                     "data-room": o.room === null ? "" : o.room}, parent);
    var cx = sx(o.x), cy = sy(o.y), name = o.label + (o.status === "lost" ? " (lost)" : "");
    var opacity = o.status === "lost" ? 0.35 : 0.35 + 0.6 * o.confidence;
    if (o.level === "furniture") {
      opacity = opacity * 0.45;
      var w = o.sx * scale, h = o.sy * scale, deg = -o.yaw * 180 / Math.PI;
      el("rect", {x: (cx - w / 2).toFixed(1), y: (cy - h / 2).toFixed(1), width: w.toFixed(1),
                  height: h.toFixed(1), fill: o.color, "fill-opacity": opacity.toFixed(2),
                  transform: "rotate(" + deg.toFixed(1) + " " + cx.toFixed(1) + " " +
                             cy.toFixed(1) + ")"}, g);
      var top = cy - Math.abs(w * Math.sin(o.yaw)) / 2 - Math.abs(h * Math.cos(o.yaw)) / 2;
      text(labels, cx, top + 13, name, "label furniture-label").setAttribute("data-id", id);
    } else {
      var rad = Math.max(5, Math.min(o.sx, o.sy) * scale / 2);
      el("circle", {cx: cx.toFixed(1), cy: cy.toFixed(1), r: rad.toFixed(1), fill: o.color,
                    "fill-opacity": opacity.toFixed(2)}, g);
      text(labels, cx + rad + 3, cy + 4, name, "label item-label").setAttribute("data-id", id);
    }
    el("title", {}, g).textContent = details(id, o, t);
  }
  function render(k) {
    while (layers.firstChild) { layers.removeChild(layers.firstChild); }
    var events = document.getElementById("events");
    while (events.firstChild) { events.removeChild(events.firstChild); }
    document.body.setAttribute("data-frame", String(k));
    if (!frames.length) {
      document.getElementById("time").textContent = "nothing recorded";
      return;
    }
    var roomLayer = el("g", {id: "rooms"}, layers);
    Object.keys(data.rooms).sort().forEach(function (name) {
      var r = at(data.rooms[name], k);
      if (r !== null) { drawRoom(name, r, roomLayer); }
    });
    var states = [];
    Object.keys(data.objects).forEach(function (id) {
      var o = at(data.objects[id], k);
      if (o !== null) { states.push([id, o]); }
    });
    states.sort(function (a, b) {  // furniture under items, bigger under smaller
      var fa = a[1].level === "furniture" ? 0 : 1, fb = b[1].level === "furniture" ? 0 : 1;
      return fa - fb || b[1].sx * b[1].sy - a[1].sx * a[1].sy || a[0] - b[0];
    });
    var objLayer = el("g", {id: "objects"}, layers);
    var moveLayer = el("g", {id: "moves"}, layers);
    var labelLayer = el("g", {id: "labels"}, layers);
    var present = {};
    states.forEach(function (s) { present[s[0]] = true;
                                  drawObject(s[0], s[1], frames[k].t, objLayer,
                                             labelLayer); });
    var latest = {};
    data.moves.forEach(function (m) { if (m[0] <= k) { latest[m[1]] = m; } });
    Object.keys(latest).forEach(function (id) {
      if (!present[id]) { return; }
      var m = latest[id], current = m[0] === k;
      el("line", {"class": current ? "move current" : "move", id: "move-" + id, "data-id": id,
                  "data-frame": m[0], x1: sx(m[2][0]).toFixed(1), y1: sy(m[2][1]).toFixed(1),
                  x2: sx(m[3][0]).toFixed(1), y2: sy(m[3][1]).toFixed(1),
                  "marker-end": "url(#arrow)"}, moveLayer);
    });
    var fr = frames[k];
    document.body.setAttribute("data-t", String(fr.t));
    document.getElementById("time").textContent = "t = " + fr.t.toFixed(1) + " s   (frame " +
      (k + 1) + " of " + frames.length + ")";
    fr.events.forEach(function (e) {
      var li = document.createElement("li");
      li.textContent = e.text;
      li.setAttribute("data-kind", e.kind);
      li.setAttribute("data-id", String(e.id));
      events.appendChild(li);
    });
    if (!fr.events.length) {
      var li = document.createElement("li");
      li.textContent = "(no events: the memory as of its latest scan)";
      events.appendChild(li);
    }
    slider.value = String(k);
  }
  function frameFromHash() {
    var last = frames.length - 1;
    var m = /^#(frame|t)=(-?[0-9.]+)$/.exec(window.location.hash);
    if (!m) { return last; }
    var v = Number(m[2]);
    if (m[1] === "frame") { return Math.max(0, Math.min(last, Math.floor(v))); }
    var k = 0;
    for (var i = 0; i < frames.length; i++) { if (frames[i].t <= v) { k = i; } }
    return k;
  }
  slider.max = String(Math.max(frames.length - 1, 0));
  slider.addEventListener("input", function () { render(Number(slider.value)); });
  window.addEventListener("hashchange", function () { render(frameFromHash()); });
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
  render(frameFromHash());
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
  #controls { display: flex; gap: 10px; align-items: center; margin: 4px 0 8px; }
  #slider { flex: 1; max-width: 640px; }
  #time { font-variant-numeric: tabular-nums; min-width: 190px; }
  #map { width: 100%; max-width: 1000px; background: #fff; border: 1px solid #ccc;
         display: block; }
  .room polygon { fill: #eef2f7; stroke: #5a6b80; stroke-width: 2.5; }
  .room-name { font-size: 15px; fill: #5a6b80; text-anchor: middle; font-weight: 600; }
  .obj rect, .obj circle { stroke: #333; stroke-width: 1.2; }
  .obj.status-tentative rect, .obj.status-tentative circle { stroke-dasharray: 3 2; }
  .obj.status-lost rect, .obj.status-lost circle { stroke: #888; stroke-dasharray: 4 3; }
  .label { font-size: 12px; fill: #222; paint-order: stroke; stroke: #fff;
           stroke-width: 3px; }
  .furniture-label { text-anchor: middle; fill: #555; font-size: 11px; font-style: italic; }
  .move { stroke: #1f5fbf; stroke-width: 2; fill: none; opacity: 0.45; }
  .move.current { opacity: 1; stroke-width: 3; }
  #events { margin: 6px 0; padding-left: 20px; font-family: ui-monospace, monospace;
            font-size: 12.5px; }
  #legend span { display: inline-block; margin-right: 12px; }
  #legend i { display: inline-block; width: 11px; height: 11px; border: 1px solid #333;
              margin-right: 4px; vertical-align: -1px; }
</style>
</head>
<body>
<h1>@@TITLE@@</h1>
<div id="controls">
  <button id="play" type="button">play</button>
  <input id="slider" type="range" min="0" max="0" step="1" value="0"
    aria-label="time: the memory as of each event">
  <span id="time"></span>
</div>
<svg id="map" xmlns="http://www.w3.org/2000/svg" role="img"
  aria-label="the memory seen from above">
  <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7"
    markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"
    fill="#1f5fbf"/></marker></defs>
  <g id="layers"></g>
</svg>
<div id="legend">@@LEGEND@@</div>
<ul id="events"></ul>
<script type="application/json" id="locimem-data">@@DATA@@</script>
<script>@@SCRIPT@@</script>
</body>
</html>
"""
