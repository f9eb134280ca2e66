#include "agent/screenshot.h"

#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tandem::agent {

using json = nlohmann::json;

namespace {

struct Rgb {
  uint8_t r, g, b;
};

constexpr Rgb kWhite{255, 255, 255}, kBlack{33, 33, 33}, kGrey{117, 117, 117}, kLight{238, 238, 238},
    kLine{224, 224, 224}, kStatus{30, 30, 30};
const Rgb kAccents[] = {{25, 118, 210}, {56, 142, 60}, {211, 47, 47}, {245, 124, 0},
                        {123, 31, 162}, {0, 151, 167}, {194, 24, 91}, {93, 64, 55}};

class Canvas {
 public:
  Canvas(int w, int h) {
    img_.width = w;
    img_.height = h;
    img_.rgb.assign(static_cast<size_t>(w) * h * 3, 250);
    k_ = w / 360.0;
    clip_bottom_ = h;
  }
  double k() const { return k_; }
  double height_dp() const { return img_.height / k_; }

  // A filled rectangle in pixels, clipped.
  void fill_px(double x0, double y0, double x1, double y1, Rgb c) {
    const int a = std::max(0, static_cast<int>(std::lround(x0))), b = std::min(img_.width, static_cast<int>(std::lround(x1)));
    const int t = std::max(clip_top_, static_cast<int>(std::lround(y0)));
    const int u = std::min(clip_bottom_, static_cast<int>(std::lround(y1)));
    for (int y = t; y < u; ++y)
      for (int x = a; x < b; ++x) {
        uint8_t* p = &img_.rgb[(static_cast<size_t>(y) * img_.width + x) * 3];
        p[0] = c.r;
        p[1] = c.g;
        p[2] = c.b;
      }
  }
  // In dp.
  void fill(double x0, double y0, double x1, double y1, Rgb c) { fill_px(x0 * k_, y0 * k_, x1 * k_, y1 * k_, c); }
  void frame(double x0, double y0, double x1, double y1, Rgb c, double w = 1) {
    fill(x0, y0, x1, y0 + w, c);
    fill(x0, y1 - w, x1, y1, c);
    fill(x0, y0, x0 + w, y1, c);
    fill(x1 - w, y0, x1, y1, c);
  }
  // A box with cut corners (a cheap rounded rectangle).
  void pill(double x0, double y0, double x1, double y1, Rgb c) {
    const double r = std::min(4.0, (y1 - y0) / 3);
    fill(x0 + r, y0, x1 - r, y1, c);
    fill(x0, y0 + r, x1, y1 - r, c);
  }

  // Text at (x, y) dp (its top), `size` dp per font unit, at most max_w dp wide (cut with "..").
  // Returns its width in dp.
  double text(double x, double y, std::string s, double size, Rgb c, double max_w = 1e9) {
    s = ascii(s);
    auto width = [&](const std::string& t) { return stb_easy_font_width(const_cast<char*>(t.c_str())) * size; };
    if (width(s) > max_w) {
      while (!s.empty() && width(s + "..") > max_w) s.pop_back();
      s += "..";
    }
    std::vector<char> buf(s.size() * 300 + 64);
    const int quads = stb_easy_font_print(0, 0, const_cast<char*>(s.c_str()), nullptr, buf.data(), static_cast<int>(buf.size()));
    for (int q = 0; q < quads; ++q) {
      const float* v0 = reinterpret_cast<const float*>(buf.data() + q * 64);
      const float* v2 = reinterpret_cast<const float*>(buf.data() + q * 64 + 32);
      fill_px((x + v0[0] * size) * k_, (y + v0[1] * size) * k_, (x + v2[0] * size) * k_, (y + v2[1] * size) * k_, c);
    }
    return width(s);
  }
  static double text_width(const std::string& s, double size) {
    const std::string a = ascii(s);
    return stb_easy_font_width(const_cast<char*>(a.c_str())) * size;
  }
  void clip(double top_dp, double bottom_dp) {
    clip_top_ = std::max(0, static_cast<int>(std::lround(top_dp * k_)));
    clip_bottom_ = std::min(img_.height, static_cast<int>(std::lround(bottom_dp * k_)));
  }
  void unclip() {
    clip_top_ = 0;
    clip_bottom_ = img_.height;
  }
  vision::RgbImage take() { return std::move(img_); }

 private:
  // The font is ASCII: every other code point is drawn as '?'.
  static std::string ascii(const std::string& s) {
    std::string o;
    for (unsigned char ch : s) {
      if (ch < 0x80) o += static_cast<char>(ch >= 32 && ch < 127 ? ch : ' ');
      else if (ch >= 0xc0) o += '?';
    }
    return o;
  }
  vision::RgbImage img_;
  double k_ = 1;
  int clip_top_ = 0, clip_bottom_ = 0;
};

std::string short_class(const json& n) {
  const std::string c = n.value("class", "");
  const size_t dot = c.rfind('.');
  return dot == std::string::npos ? c : c.substr(dot + 1);
}
std::string label(const json& n) {
  if (n.contains("text") && n["text"].is_string()) return n["text"].get<std::string>();
  if (n.contains("content_desc") && n["content_desc"].is_string()) return n["content_desc"].get<std::string>();
  return "";
}
const json& children(const json& n) {
  static const json none = json::array();
  return n.contains("children") && n["children"].is_array() ? n["children"] : none;
}

// An icon: a framed square with the label's first letter ("<" for Back).
void icon(Canvas& cv, double x, double y, double s, const std::string& desc, Rgb c) {
  cv.frame(x, y, x + s, y + s, c, 1.5);
  std::string g = desc == "Back" ? "<" : desc == "More options" ? ":" : desc.empty() ? "*" : desc.substr(0, 1);
  cv.text(x + s / 2 - Canvas::text_width(g, 1.6) / 2, y + s / 2 - 5, g, 1.6, c);
}

void toggle(Canvas& cv, double x, double y, bool on, Rgb accent) {
  cv.pill(x, y, x + 36, y + 18, on ? accent : Rgb{189, 189, 189});
  const double kx = on ? x + 20 : x + 2;
  cv.fill(kx, y + 2, kx + 14, y + 16, kWhite);
}

void list_row(Canvas& cv, const json& row, double y, double h, Rgb accent) {
  std::vector<std::string> texts;
  for (const json& c : children(row))
    if (short_class(c) == "TextView" && !label(c).empty()) texts.push_back(label(c));
  const double right = 344;
  double controls_x = right;
  for (const json& c : children(row)) {
    const std::string cls = short_class(c);
    if (cls == "Switch") {
      controls_x -= 40;
      toggle(cv, controls_x, y + h / 2 - 9, c.value("checked", false), accent);
    } else if (cls == "ImageButton") {
      controls_x -= 28;
      icon(cv, controls_x, y + h / 2 - 11, 22, label(c), kGrey);
    }
  }
  cv.fill(16, y + 8, 56, y + h - 8, kLight);  // a thumbnail
  const double tx = 66;
  if (!texts.empty()) cv.text(tx, y + 10, texts[0], 1.45, kBlack, controls_x - tx - 8);
  if (texts.size() > 1) cv.text(tx, y + 32, texts[1], 1.25, kGrey, controls_x - tx - 70);
  if (texts.size() > 2) {
    const double w = Canvas::text_width(texts[2], 1.15);
    cv.text(controls_x - w - 4, y + 34, texts[2], 1.15, kGrey);
  }
  cv.fill(16, y + h - 1, 344, y + h, kLine);
}

}  // namespace

std::pair<int, int> parse_size(const std::string& s) {
  const size_t x = s.find('x');
  try {
    if (x == std::string::npos) throw std::invalid_argument("");
    size_t a = 0, b = 0;
    const int w = std::stoi(s.substr(0, x), &a), h = std::stoi(s.substr(x + 1), &b);
    if (a != x || b != s.size() - x - 1) throw std::invalid_argument("");
    return {w, h};
  } catch (const std::exception&) {
    throw std::invalid_argument("expected WIDTHxHEIGHT (e.g. 720x1560), got \"" + s + "\"");
  }
}

vision::RgbImage render_screen(const json& tree, const ScreenStyle& st) {
  if (st.width < 90 || st.width > 4096 || st.height < 90 || st.height > 8192)
    throw std::invalid_argument("screenshot size " + std::to_string(st.width) + "x" + std::to_string(st.height) +
                                " outside 90..4096 x 90..8192");
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : st.app) h = (h ^ c) * 0x100000001b3ull;
  const Rgb accent = kAccents[h % (sizeof kAccents / sizeof kAccents[0])];
  Canvas cv(st.width, st.height);
  const double H = cv.height_dp();

  // Status bar: the clock, signal and battery.
  cv.fill(0, 0, 360, 24, kStatus);
  cv.text(12, 7, st.clock, 1.3, kWhite);
  cv.fill(300, 9, 304, 17, kWhite);
  cv.fill(306, 7, 310, 17, kWhite);
  cv.frame(318, 7, 342, 17, kWhite);
  cv.fill(320, 9, 336, 15, kWhite);

  const json& roots = tree.is_array() ? tree : json::array({tree});
  // The nodes of the screen: the root's children (generated screens), else the roots.
  std::vector<const json*> parts;
  for (const json& r : roots) {
    if (children(r).empty()) parts.push_back(&r);
    for (const json& c : children(r)) parts.push_back(&c);
  }
  double bottom = H;
  for (const json* n : parts)
    if (n->value("resource_id", "") == "bottom_nav") bottom = H - 56;
  double y = 24;
  for (const json* np : parts) {
    const json& n = *np;
    const std::string cls = short_class(n), id = n.value("resource_id", "");
    if (id == "bottom_nav") {
      cv.fill(0, bottom, 360, H, kWhite);
      cv.fill(0, bottom, 360, bottom + 1, kLine);
      const json& tabs = children(n);
      const double w = 360.0 / std::max<size_t>(1, tabs.size());
      for (size_t i = 0; i < tabs.size(); ++i) {
        const Rgb c = tabs[i].value("selected", false) ? accent : kGrey;
        const double cx = w * static_cast<double>(i) + w / 2;
        cv.pill(cx - 10, bottom + 8, cx + 10, bottom + 26, c);
        const std::string t = label(tabs[i]);
        cv.text(cx - Canvas::text_width(t, 1.2) / 2, bottom + 34, t, 1.2, c, w - 4);
      }
    } else if (id == "fab") {
      const double x = 288, t = bottom - 72;
      cv.pill(x, t, x + 56, t + 56, accent);
      cv.fill(x + 26, t + 16, x + 30, t + 40, kWhite);
      cv.fill(x + 16, t + 26, x + 40, t + 30, kWhite);
    } else if (cls == "ViewGroup" || cls == "Toolbar") {  // the top bar
      cv.fill(0, y, 360, y + 56, accent);
      double x = 12;
      for (const json& c : children(n)) {
        const std::string cc = short_class(c);
        if (cc == "ImageButton" && label(c) != "Back") {
          icon(cv, 324, y + 16, 24, label(c), kWhite);
        } else if (cc == "ImageButton") {
          icon(cv, x, y + 16, 24, label(c), kWhite);
          x += 36;
        } else if (!label(c).empty()) {
          cv.text(x + 4, y + 18, label(c), 2.0, kWhite, 300 - x);
        }
      }
      y += 56;
    } else if (cls == "EditText") {
      cv.pill(12, y + 8, 348, y + 48, kLight);
      cv.frame(26, y + 20, 38, y + 32, kGrey, 1.5);  // a magnifier
      cv.text(48, y + 22, label(n), 1.4, kGrey, 290);
      y += 56;
    } else if (cls == "HorizontalScrollView") {
      double x = 12;
      for (const json& c : children(n)) {
        const std::string t = label(c);
        const double w = Canvas::text_width(t, 1.25) + 24;
        if (x + w > 356) break;
        cv.pill(x, y + 6, x + w, y + 34, Rgb{227, 242, 253});
        cv.text(x + 12, y + 14, t, 1.25, accent);
        x += w + 8;
      }
      y += 40;
    } else if (cls == "RecyclerView" || cls == "ListView" || cls == "ScrollView") {
      cv.clip(y, bottom);
      for (const json& row : children(n)) {
        size_t n_text = 0;
        for (const json& c : children(row)) n_text += short_class(c) == "TextView" && !label(c).empty();
        const double rh = n_text > 2 ? 64 : 56;
        if (y >= bottom) break;
        list_row(cv, row, y, rh, accent);
        y += rh;
      }
      cv.unclip();
    } else if (!label(n).empty() && y < bottom) {
      cv.text(16, y + 8, label(n), 1.4, kBlack, 328);
      y += 28;
    }
  }
  return cv.take();
}

std::vector<uint8_t> encode_png(const vision::RgbImage& img) {
  std::vector<uint8_t> out;
  const int ok = stbi_write_png_to_func(
      [](void* ctx, void* data, int n) {
        auto* o = static_cast<std::vector<uint8_t>*>(ctx);
        o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + n);
      },
      &out, img.width, img.height, 3, img.rgb.data(), img.width * 3);
  if (!ok) throw std::runtime_error("PNG encoding failed");
  return out;
}

}  // namespace tandem::agent
