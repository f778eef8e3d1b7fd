// Apogee console: live charts on the dashboard and confirmations on
// destructive forms. Our own code, no libraries: charts are SVG polylines
// redrawn from /api/dashboard every two seconds.
"use strict";

(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = ["#2a6fdb", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d"];
  var KEEP = 90; // points per series (3 minutes)

  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  });

  function el(name, attrs, text) {
    var n = document.createElementNS(SVG, name);
    for (var k in attrs) { n.setAttribute(k, attrs[k]); }
    if (text !== undefined) { n.textContent = text; }
    return n;
  }

  // draw renders series {name: [[t, v], ...]} into an SVG of 600x200.
  function draw(svg, series) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var W = 600, H = 200, L = 48, B = 20, T = 8;
    var t0 = Infinity, t1 = -Infinity, vmax = 1;
    Object.keys(series).forEach(function (k) {
      series[k].forEach(function (p) {
        t0 = Math.min(t0, p[0]); t1 = Math.max(t1, p[0]); vmax = Math.max(vmax, p[1]);
      });
    });
    if (t1 <= t0) { t1 = t0 + 1; }
    vmax = niceMax(vmax);
    for (var i = 0; i <= 4; i++) {
      var y = T + (H - T - B) * i / 4;
      svg.appendChild(el("line", {x1: L, x2: W, y1: y, y2: y, "class": "grid"}));
      svg.appendChild(el("text", {x: L - 4, y: y + 4, "class": "axis", "text-anchor": "end"}, fmt(vmax * (4 - i) / 4)));
    }
    Object.keys(series).sort().forEach(function (k, idx) {
      var pts = series[k].map(function (p) {
        var x = L + (W - L) * (p[0] - t0) / (t1 - t0);
        var y = T + (H - T - B) * (1 - p[1] / vmax);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      var line = el("polyline", {points: pts.join(" "), fill: "none", stroke: COLORS[idx % COLORS.length], "stroke-width": 2});
      line.appendChild(el("title", {}, k));
      svg.appendChild(line);
    });
    svg.appendChild(el("text", {x: W, y: H - 4, "class": "axis", "text-anchor": "end"}, new Date(t1).toLocaleTimeString()));
  }

  function niceMax(v) {
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var m = [1, 2, 5, 10].find(function (f) { return f * p >= v; });
    return m * p;
  }

  function fmt(v) { return v >= 1000 ? (v / 1000).toFixed(1) + "k" : String(Math.round(v * 10) / 10); }

  function push(store, key, t, v) {
    var s = store[key] || (store[key] = []);
    s.push([t, v]);
    if (s.length > KEEP) { s.shift(); }
  }

  function legend(names) {
    var box = document.getElementById("legend");
    if (!box) { return; }
    box.textContent = "";
    names.sort().forEach(function (n, i) {
      var span = document.createElement("span");
      span.className = "key";
      span.style.borderColor = COLORS[i % COLORS.length];
      span.textContent = n;
      box.appendChild(span);
    });
  }

  function dashboard() {
    var cin = document.getElementById("chart-in");
    if (!cin) { return; }
    var cout = document.getElementById("chart-out");
    var ctop = document.getElementById("chart-topics");
    var ins = {}, outs = {}, tops = {}, last = {};
    function poll() {
      fetch("/api/dashboard", {cache: "no-store"}).then(function (r) { return r.json(); }).then(function (d) {
        if (d.error) { return; }
        (d.brokers || []).forEach(function (b) {
          push(ins, b.name, d.time, b.inTps);
          push(outs, b.name, d.time, b.outTps);
        });
        (d.topics || []).forEach(function (t) {
          var prev = last[t.topic];
          if (prev) {
            var dt = (d.time - prev.time) / 1000;
            push(tops, t.topic, d.time, dt > 0 ? Math.max(0, (t.total - prev.total) / dt) : 0);
          }
          last[t.topic] = {time: d.time, total: t.total};
        });
        draw(cin, ins);
        draw(cout, outs);
        if (ctop) { draw(ctop, tops); }
        legend(Object.keys(ins));
        document.body.setAttribute("data-polls", String((+document.body.getAttribute("data-polls") || 0) + 1));
      }).catch(function () {});
    }
    poll();
    setInterval(poll, 2000);
  }

  document.addEventListener("DOMContentLoaded", dashboard);
})();
