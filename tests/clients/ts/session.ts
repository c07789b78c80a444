// The README's curl session (scripts/serve.py `check()`), then some of the contract's error
// answers, through openapi-fetch typed by openapi-typescript's `paths` of openapi.json
// (gen/ts/api.d.ts). Requests are written against paths and methods, which are stable;
// every field read goes through the generated types (no `any`).
//
//   HONGBAO_BASE_URL=http://127.0.0.1:3000 node gen/ts-out/ts/session.js
//
// scripts/contract.py generates the types, type-checks (tsc --strict), compiles and runs it
// against a `make serve` on a free port. Exit status 1 when a check fails.
import { createHash, createHmac } from "node:crypto";
import createClient from "openapi-fetch";
import type { paths } from "../gen/ts/api.js";

const baseUrl = process.env["HONGBAO_BASE_URL"];
if (!baseUrl) {
  console.error("HONGBAO_BASE_URL is not set (e.g. http://127.0.0.1:3000)");
  process.exit(2);
}

// Unique per run, so the session also passes against a long-running `make serve`.
const run = `${Date.now().toString(36)}-${process.pid}`;
const aliceId = `alice-${run}`;

// One client per caller: `make serve` takes the caller from x-user-id (the deployed API from
// its JWT authorizer, which the document declares).
const as = (user?: string) =>
  createClient<paths>({ baseUrl, headers: user === undefined ? {} : { "x-user-id": user } });
const alice = as(aliceId);
const bob = as(`bob-${run}`);
const carol = as(`carol-${run}`);
const dave = as(`dave-${run}`);
const anonymous = as();

const failed: string[] = [];
function expect(name: string, ok: boolean, detail: unknown): void {
  console.log((ok ? "PASS  " : "FAIL  ") + name + (ok ? "" : `\n      ${JSON.stringify(detail)}`));
  if (!ok) failed.push(name);
}

{
  const { data, error, response } = await alice.POST("/wallet/deposits", {
    body: { user_id: aliceId, amount_cents: 10000, reference: `ts-${run}` },
  });
  expect("deposit 100.00 -> 201", response.status === 201 && data?.balance_cents === 10000
    && data.repeat === false, { status: response.status, data, error });
}
const packetBody = { total_cents: 1000, count: 3, greeting: "恭喜发财" };
const created = await alice.POST("/packets", {
  params: { header: { "Idempotency-Key": `ts-packet-${run}` } },
  body: packetBody,
});
expect("create a 3-share packet of 10.00 -> 201", created.response.status === 201
  && created.data?.total_cents === 1000 && created.data.count === 3, created.data ?? created.error);
const packetId: string = created.data?.packet_id ?? "missing";
{
  const { data, error, response } = await alice.POST("/packets", {
    params: { header: { "Idempotency-Key": `ts-packet-${run}` } },
    body: packetBody,
  });
  expect("the same Idempotency-Key again -> the same packet", response.status === 201
    && data?.packet_id === packetId, data ?? error);
}
// A grab answers 200 with a share, or 202 without one (a draw packet's entry): `in` narrows.
const grab = await bob.POST("/packets/{id}/grab", { params: { path: { id: packetId } } });
const share = grab.data && "amount_cents" in grab.data ? grab.data.amount_cents : 0;
expect("bob grabs -> 200 with a share", grab.response.status === 200 && share > 0
  && grab.data?.packet_id === packetId, grab.data ?? grab.error);
{
  const { data, error, response } = await bob.POST("/packets/{id}/grab", {
    params: { path: { id: packetId } },
  });
  expect("bob grabs again -> 409 already_grabbed", response.status === 409 && data === undefined
    && error?.error === "already_grabbed" && typeof error.message === "string", error);
}
{
  const { data, error, response } = await bob.POST("/packets/{id}/claim", {
    params: { path: { id: packetId } },
  });
  expect("bob claims -> 200", response.status === 200 && data?.repeat === false
    && data.amount_cents === share && data.packet_id === packetId, data ?? error);
}
{
  const { data, error, response } = await bob.GET("/wallet");
  expect("bob's wallet holds his share", response.status === 200
    && data?.balance_cents === share
    && data.entries.length === 1, data ?? error);
}
{
  const { data, error, response } = await alice.GET("/wallet");
  expect("alice paid 10.00 once", response.status === 200 && data?.balance_cents === 9000,
    data ?? error);
}
{
  const { data, error, response } = await carol.GET("/packets/{id}", {
    params: { path: { id: packetId } },
  });
  const grabs = data?.grabs ?? [];
  expect("the packet shows one grab, claimed", response.status === 200 && grabs.length === 1
    && grabs[0]?.claimed === true && grabs[0].amount_cents === share, data ?? error);
}
{
  const { data, error, response } = await alice.GET("/packets", {
    params: { query: { role: "sent" } },
  });
  expect("alice's sent history lists the packet", response.status === 200
    && data?.items.some((item) => item.packet_id === packetId) === true, data ?? error);
}
{
  const { data, error, response } = await alice.POST("/order-codes", { body: { count: 2 } });
  expect("two order codes -> 201", response.status === 201 && data?.codes.length === 2,
    data ?? error);
}
{
  const { data, error, response } = await alice.POST("/articles", {
    body: { title: "hongbao", link: "https://example.com/" },
  });
  expect("post an article -> 201", response.status === 201 && data?.votes === 1
    && data.title === "hongbao", data ?? error);
}
// A coupon drop: the merchant (the AWS_IAM routes; `make serve` signs every request as its
// local principal) creates a campaign of two codes, bob and carol grab one each, the checkout
// redeems bob's.
const couponCodes = [`TS-${run}-1`, `TS-${run}-2`];
const campaign = await anonymous.POST("/campaigns", {
  body: {
    title: "20 off 100",
    codes: couponCodes,
    ends_at: new Date(Date.now() + 86_400_000).toISOString(),
    reference: `ts-drop-${run}`,
  },
});
expect("the merchant creates a campaign of 2 codes -> 201, open", campaign.response.status === 201
  && campaign.data?.status === "open" && campaign.data.codes_left === 2,
  campaign.data ?? campaign.error);
const campaignId: string = campaign.data?.campaign_id ?? "missing";
const bobsCoupon = await bob.POST("/campaigns/{id}/grab", { params: { path: { id: campaignId } } });
// 200 (a coupon) or 202 (a draw campaign's entry): this campaign is first come, first served.
const bobsCode: string =
  bobsCoupon.data && "code" in bobsCoupon.data ? bobsCoupon.data.code : "missing";
expect("bob grabs a coupon -> 200", bobsCoupon.response.status === 200
  && couponCodes.includes(bobsCode) && bobsCoupon.data?.campaign_id === campaignId,
  bobsCoupon.data ?? bobsCoupon.error);
const carolsCoupon = await carol.POST("/campaigns/{id}/grab", {
  params: { path: { id: campaignId } },
});
const carolsCode: string =
  carolsCoupon.data && "code" in carolsCoupon.data ? carolsCoupon.data.code : "missing";
expect("carol grabs the other one -> 200", carolsCoupon.response.status === 200
  && couponCodes.includes(carolsCode) && carolsCode !== bobsCode,
  carolsCoupon.data ?? carolsCoupon.error);
{
  const { data, error, response } = await dave.POST("/campaigns/{id}/grab", {
    params: { path: { id: campaignId } },
  });
  expect("dave is too late -> 410 sold_out", response.status === 410 && data === undefined
    && error?.error === "sold_out", error);
}
{
  const { data, error, response } = await bob.GET("/campaigns/{id}", {
    params: { path: { id: campaignId } },
  });
  expect("the campaign is sold out and shows bob his coupon", response.status === 200
    && data?.status === "sold_out" && data.codes_left === 0
    && JSON.stringify(data.coupons) === JSON.stringify([bobsCode]), data ?? error);
}
const redeem = { code: bobsCode, user_id: `bob-${run}`, order_reference: `ts-order-${run}` };
{
  const { data, error, response } = await anonymous.POST("/coupons/redeem", { body: redeem });
  expect("the checkout redeems bob's coupon -> 200", response.status === 200
    && data?.campaign_id === campaignId && data.repeat === false, data ?? error);
}
{
  const { error, response } = await anonymous.POST("/coupons/redeem", {
    body: { ...redeem, order_reference: `ts-order-2-${run}` },
  });
  expect("another order redeems it -> 409 already_redeemed", response.status === 409
    && error?.error === "already_redeemed" && error.order_reference === redeem.order_reference,
    error);
}
{
  const { data, error, response } = await bob.GET("/coupons");
  expect("bob's coupons: the one he grabbed, redeemed", response.status === 200
    && data?.items.length === 1 && data.items[0]?.code === bobsCode
    && data.items[0].state === "redeemed", data ?? error);
}
// A checkout of carol's coupon: held while she pays, redeemed, released when the order is
// refunded, then redeemed again by her next order.
const cart = { code: carolsCode, user_id: `carol-${run}`, order_reference: `ts-cart-${run}` };
{
  const { data, error, response } = await anonymous.POST("/coupons/hold", {
    body: { ...cart, order_total_cents: 12000, hold_secs: 60 },
  });
  expect("the checkout holds carol's coupon -> 200 held", response.status === 200
    && data?.state === "held" && data.order_reference === cart.order_reference, data ?? error);
}
{
  const { data, error, response } = await anonymous.POST("/coupons/redeem", { body: cart });
  expect("the payment succeeds: the hold redeemed -> 200", response.status === 200
    && data?.order_reference === cart.order_reference && data.repeat === false, data ?? error);
}
{
  const { data, error, response } = await anonymous.POST("/coupons/release", {
    body: { code: carolsCode, order_reference: cart.order_reference },
  });
  expect("the order is refunded: the redemption released -> 200", response.status === 200
    && data?.released === "redemption" && data.repeat === false, data ?? error);
}
{
  const { data, error, response } = await anonymous.POST("/coupons/redeem", {
    body: { ...cart, order_reference: `ts-cart-2-${run}` },
  });
  expect("carol's next order redeems it again -> 200", response.status === 200
    && data?.order_reference === `ts-cart-2-${run}`, data ?? error);
}
// Chat packets: a password packet with a cover, grabbed with its password, then cancelled by
// alice (its un-grabbed shares come back at once), its fairness receipt checked from the view
// alone (the README's check); and a packet scheduled to open in a minute.
const password = "芝麻开门";
const chat = await alice.POST("/packets", {
  body: { total_cents: 300, count: 3, password, cover: "lantern-2027" },
});
expect("a password packet with a cover -> 201, password_protected", chat.response.status === 201
  && chat.data?.password_protected === true && chat.data.cover === "lantern-2027",
  chat.data ?? chat.error);
const chatId: string = chat.data?.packet_id ?? "missing";
{
  const { data, error, response } = await dave.POST("/packets/{id}/grab", {
    params: { path: { id: chatId } },
  });
  expect("dave grabs without the password -> 403 wrong_password", response.status === 403
    && data === undefined && error?.error === "wrong_password", error);
}
const chatGrab = await dave.POST("/packets/{id}/grab", {
  params: { path: { id: chatId } },
  body: { password },
});
const daveShare = chatGrab.data && "share_id" in chatGrab.data ? chatGrab.data : undefined;
const daveCents = daveShare?.amount_cents ?? -1;
expect("dave types it -> 200, share 1", chatGrab.response.status === 200
  && daveShare?.share_id === 1 && daveCents > 0, chatGrab.data ?? chatGrab.error);
{
  const { data, error, response } = await alice.POST("/packets/{id}/cancel", {
    params: { path: { id: chatId } },
  });
  expect("alice cancels -> 200, the two un-grabbed shares refunded", response.status === 200
    && data?.status === "cancelled" && data.refunded_cents === 300 - daveCents, data ?? error);
}
{
  const { error, response } = await bob.POST("/packets/{id}/cancel", {
    params: { path: { id: chatId } },
  });
  expect("bob cancels alice's packet -> 403", response.status === 403
    && error?.error === "forbidden", error);
}
{
  const { data, error, response } = await carol.POST("/packets/{id}/grab", {
    params: { path: { id: chatId } },
    body: { password },
  });
  expect("carol grabs after the cancel -> 410 cancelled", response.status === 410
    && data === undefined && error?.error === "cancelled", error);
}
{
  const { data, error, response } = await dave.GET("/packets/{id}", {
    params: { path: { id: chatId } },
  });
  const reveal = data?.reveal;
  const shares = reveal?.shares_cents ?? [];
  const digest = createHash("sha256")
    .update(`hongbao-shares-v1:${reveal?.salt ?? ""}:${shares.join(",")}`, "utf8")
    .digest("hex");
  expect("the cancelled packet's receipt holds (commitment, sum, dave's share)",
    response.status === 200 && data?.status === "cancelled" && digest === data.commitment
    && shares.reduce((sum, cents) => sum + cents, 0) === data.total_cents
    && shares[0] === daveCents, data ?? error);
}
{
  const later = await alice.POST("/packets", {
    body: { total_cents: 100, count: 1, opens_in_secs: 60 },
  });
  expect("a packet scheduled to open in a minute -> 201", later.response.status === 201
    && typeof later.data?.opens_at === "string", later.data ?? later.error);
  const { data, error, response } = await bob.POST("/packets/{id}/grab", {
    params: { path: { id: later.data?.packet_id ?? "missing" } },
  });
  const retryAfter = Number(response.headers.get("retry-after"));
  expect("grab before it opens -> 425 not_open_yet, Retry-After <= 60", response.status === 425
    && data === undefined && error?.error === "not_open_yet"
    && typeof error.opens_at === "string" && retryAfter >= 1 && retryAfter <= 60, error);
}
// Error answers, each parsed into the document's error body.
{
  const { data, error, response } = await anonymous.GET("/wallet");
  expect("no x-user-id -> 401 unauthorized", response.status === 401 && data === undefined
    && error?.error === "unauthorized", error);
}
{
  const { error, response } = await alice.POST("/packets", { body: { total_cents: 1000, count: 0 } });
  expect("count 0 -> 400 invalid_request", response.status === 400
    && error?.error === "invalid_request", error);
}
{
  const { error, response } = await alice.POST("/packets", {
    body: { total_cents: 9001, count: 1 },
  });
  expect("more than the balance -> 402 insufficient_funds", response.status === 402
    && error?.error === "insufficient_funds", error);
}
{
  const { error, response } = await carol.GET("/packets/{id}", {
    params: { path: { id: `no-such-packet-${run}` } },
  });
  expect("an unknown packet -> 404 not_found", response.status === 404
    && error?.error === "not_found", error);
}
{
  const { error, response } = await carol.POST("/packets/{id}/claim", {
    params: { path: { id: packetId } },
  });
  expect("claim without a share -> 404 no_share", response.status === 404
    && error?.error === "no_share" && error.message.length > 0, error);
}

// A merchant's order packet: the team's backend (AWS_IAM) funds the merchant's budget and
// creates the packet of one order for its customer to share; the sharer's share is taken at
// creation, six friends race for the other five shares, one claims hers as a coupon (the
// packet pays out as coupons) and pays with it at checkout.
const merchantId = `ts-shop-${run}`;
{
  const { data, error, response } = await anonymous.POST("/merchants/{merchant_id}/deposits", {
    params: { path: { merchant_id: merchantId } },
    body: { amount_cents: 100_000, reference: `ts-budget-${run}` },
  });
  expect("the merchant's budget funded -> 201", response.status === 201
    && data?.balance_cents === 100_000, data ?? error);
}
const order = {
  merchant_id: merchantId, order_reference: `ts-order-packet-${run}`, sharer_id: `sharer-${run}`,
  total_cents: 2000, count: 6, payout: "coupon" as const, sharer_first: true,
  coupon: { min_order_cents: 1_000, redeem_within_secs: 86_400 },
};
const made = await anonymous.POST("/merchant-packets", { body: order });
expect("the order's packet -> 201, paid by the merchant, shared by the sharer",
  made.response.status === 201 && made.data?.merchant_id === merchantId
  && made.data.sharer_id === order.sharer_id && made.data.repeat === false,
  made.data ?? made.error);
const orderPacket: string = made.data?.packet_id ?? "missing";
{
  const { data, error, response } = await anonymous.POST("/merchant-packets", { body: order });
  expect("the same order again -> 201 Idempotent-Replayed, the same packet",
    response.status === 201 && response.headers.get("idempotent-replayed") === "true"
    && data?.packet_id === orderPacket && data.repeat === true, data ?? error);
}
const friends = [1, 2, 3, 4, 5, 6].map((i) => as(`friend-${i}-${run}`));
const grabs = await Promise.all(friends.map((f) => f.POST("/packets/{id}/grab", {
  params: { path: { id: orderPacket } },
})));
expect("six friends grab the five shares left: five win, one finds it sold out",
  grabs.filter((g) => g.response.status === 200).length === 5
  && grabs.filter((g) => g.error?.error === "sold_out").length === 1,
  grabs.map((g) => g.response.status));
const winner = grabs.findIndex((g) => g.response.status === 200);
{
  const { data, error, response } = await friends[winner]!.POST("/packets/{id}/claim", {
    params: { path: { id: orderPacket } },
  });
  const won = grabs[winner]!.data;
  const share = won && "amount_cents" in won ? won.amount_cents : undefined;
  expect("a winner claims her share as a coupon worth it -> 200", response.status === 200
    && data?.amount_cents === share && data?.coupon?.amount_off_cents === share, data ?? error);
  const paid = await anonymous.POST("/coupons/redeem", {
    body: {
      code: data?.coupon?.code ?? "missing", user_id: `friend-${winner + 1}-${run}`,
      order_reference: `ts-order-coupon-${run}`, order_total_cents: 5_000,
    },
  });
  expect("she pays with the coupon at checkout: the share off her order -> 200",
    paid.response.status === 200 && paid.data?.discount_cents === share, paid.data ?? paid.error);
}
{
  const { data, error, response } = await anonymous.GET("/merchants/{merchant_id}", {
    params: { path: { merchant_id: merchantId } },
  });
  const b = data;
  expect("the merchant's books close: deposited = balance + reserved + outstanding + paid out",
    response.status === 200 && b !== undefined && b.deposited_cents - b.withdrawn_cents
      === b.balance_cents + b.reserved_cents + b.outstanding_coupon_cents + b.paid_cash_cents
      + b.paid_coupon_cents && b.paid_coupon_cents > 0, data ?? error);
}
{
  const { data, error, response } = await anonymous.GET("/merchants/{merchant_id}/packets", {
    params: { path: { merchant_id: merchantId } },
  });
  expect("the merchant's packets list the order's packet", response.status === 200
    && data?.items.length === 1 && data.items[0]?.packet_id === orderPacket
    && data.items[0].order_reference === order.order_reference, data ?? error);
}

// A draw packet and a draw campaign: three users enter each during its 10 s window (202),
// then each checks the draw from the public view alone, as the README shows: the seed hashes
// to the commitment, their ticket is HMAC-SHA256(seed bytes, user id), and they won exactly
// when it is at most the threshold; a winner's grab answers the share (the code), anyone
// else's 410 not_drawn.
{
  const drawMade = await alice.POST("/packets", {
    body: {
      total_cents: 200, count: 2, mode: "fixed", expires_in_secs: 60, draw: { entry_secs: 10 },
    },
  });
  const drawId: string = drawMade.data?.packet_id ?? "missing";
  expect("a draw packet -> 201 with its commitment, no seed", drawMade.response.status === 201
    && drawMade.data?.draw?.commitment.length === 64 && drawMade.data.draw.seed === undefined,
  drawMade.data ?? drawMade.error);
  const drawCampaign = await anonymous.POST("/campaigns", {
    body: {
      title: "the draw",
      codes: [`TSDRAW-${run}`],
      ends_at: new Date(Date.now() + 86_400_000).toISOString(),
      reference: `ts-draw-${run}`,
      draw: { entry_secs: 10 },
    },
  });
  const drawCampaignId: string = drawCampaign.data?.campaign_id ?? "missing";
  expect("a draw campaign of 1 code -> 201, entering, no seed", drawCampaign.response.status === 201
    && drawCampaign.data?.status === "entering" && drawCampaign.data.draw?.seed === undefined,
  drawCampaign.data ?? drawCampaign.error);
  const entrants: [string, ReturnType<typeof as>][] = [
    [`bob-${run}`, bob], [`carol-${run}`, carol], [`dave-${run}`, dave],
  ];
  for (const [id, who] of entrants) {
    const e = await who.POST("/packets/{id}/grab", { params: { path: { id: drawId } } });
    expect(`${id} enters -> 202`, e.response.status === 202 && e.data !== undefined
      && "entered" in e.data && e.data.entered, e.data ?? e.error);
    const c = await who.POST("/campaigns/{id}/grab", { params: { path: { id: drawCampaignId } } });
    expect(`${id} enters the campaign's draw -> 202`, c.response.status === 202
      && c.data !== undefined && "entered" in c.data && c.data.entered, c.data ?? c.error);
  }
  const drawAt = Date.parse(drawMade.data?.draw?.draw_at ?? "");
  await new Promise((done) => setTimeout(done, Math.max(0, drawAt - Date.now()) + 1500));
  for (const [id, who] of entrants) {
    const { data, error, response } = await who.GET("/packets/{id}", {
      params: { path: { id: drawId } },
    });
    const seed = data?.draw?.seed ?? "";
    const committed = createHash("sha256").update(`hongbao-draw-v1:${seed}`, "utf8")
      .digest("hex") === data?.draw?.commitment;
    const ticket = createHmac("sha256", Buffer.from(seed, "hex")).update(id, "utf8")
      .digest("hex");
    const won = data?.grabs.some((g) => g.user_id === id) ?? false;
    const threshold = data?.draw?.threshold;
    expect(`${id} checks the draw from the view`, response.status === 200
      && data?.status === "drawn" && committed && ticket === data.ticket
      && won === (threshold !== undefined && ticket <= threshold), data ?? error);
    const again = await who.POST("/packets/{id}/grab", { params: { path: { id: drawId } } });
    expect(`${id} grabs after the draw -> ${won ? "200, the share" : "410 not_drawn"}`, won
      ? again.response.status === 200
      : again.response.status === 410 && again.error?.error === "not_drawn", again.data ?? again.error);
    // The campaign: one code, so one winner; the grab tells who, the view proves it.
    const grabbed = await who.POST("/campaigns/{id}/grab", {
      params: { path: { id: drawCampaignId } },
    });
    const gotCode = grabbed.response.status === 200;
    const viewed = await who.GET("/campaigns/{id}", { params: { path: { id: drawCampaignId } } });
    const d = viewed.data?.draw;
    const cSeed = d?.seed ?? "";
    const cTicket = createHmac("sha256", Buffer.from(cSeed, "hex")).update(id, "utf8")
      .digest("hex");
    const cCommitted = createHash("sha256").update(`hongbao-draw-v1:${cSeed}`, "utf8")
      .digest("hex") === d?.commitment;
    expect(`${id} checks the campaign's draw from the view`, viewed.response.status === 200
      && cCommitted && cTicket === viewed.data?.ticket && d?.winners === 1
      && gotCode === (d.threshold !== undefined && cTicket <= d.threshold),
    viewed.data ?? viewed.error);
  }
}

console.log(failed.length === 0 ? "\nts session: all checks passed"
  : `\nts session: ${failed.length} check(s) failed`);
process.exit(failed.length === 0 ? 0 : 1);
