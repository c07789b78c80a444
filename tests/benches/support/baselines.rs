//! The baselines' scripts and data: seed 000's grab (the original red-packet blog post's), and
//! "Redis in Action" chapter 1's vote with its one article.

/// The original red-packet blog post's grab script, verbatim in its logic (`getHbLua`): KEYS[1]
/// pool of JSON shares, KEYS[2] detail list, KEYS[3] hash of users who grabbed, KEYS[4] the user
/// id.
pub const SEED_GRAB: &str = r#"
if redis.call('hexists', KEYS[3], KEYS[4]) ~= 0 then
  return '1'
else
  local hb = redis.call('rpop', KEYS[1])
  if hb then
    local x = cjson.decode(hb)
    x['userId'] = KEYS[4]
    local re = cjson.encode(x)
    redis.call('hset', KEYS[3], KEYS[4], '1')
    redis.call('lpush', KEYS[2], re)
    return re
  else
    return '0'
  end
end
return nil
"#;

/// "Redis in Action" chapter 1 `article_vote` (ZSCORE of the time set against the cutoff,
/// SADD of the voter, ZINCRBY of the score, HINCRBY of the votes) as one script. KEYS[1] time
/// set, KEYS[2] voted set, KEYS[3] score set, KEYS[4] article hash; ARGV[1] article member,
/// ARGV[2] user, ARGV[3] cutoff (Unix s).
pub const CH1_VOTE: &str = r#"
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) < tonumber(ARGV[3]) then
  return 0
end
if redis.call('SADD', KEYS[2], ARGV[2]) == 1 then
  redis.call('ZINCRBY', KEYS[3], 432, ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'votes', 1)
end
return 1
"#;

/// Chapter 1's keys for [`CH1_VOTE`]: time set, voted set, score set, article hash (the
/// article is member `a`).
pub const CH1_KEYS: [&str; 4] = [
    "ch1:{s}:time",
    "ch1:{s}:voted",
    "ch1:{s}:score",
    "ch1:{s}:article",
];

/// Posts chapter 1's one article `a` at Redis `TIME` (its time and score entries, its hash with
/// one vote) on `conn`; returns the cutoff to pass as [`CH1_VOTE`]'s ARGV[3] (Unix s).
pub async fn ch1_article(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let [time, _, score, hash] = CH1_KEYS;
    let now: (i64, i64) = redis::cmd("TIME").query_async(conn).await.expect("TIME");
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(time)
        .arg(now.0)
        .arg("a")
        .ignore()
        .cmd("ZADD")
        .arg(score)
        .arg(now.0 + 432)
        .arg("a")
        .ignore()
        .cmd("HSET")
        .arg(hash)
        .arg("votes")
        .arg(1)
        .ignore()
        .query_async(conn)
        .await
        .expect("ch1 setup");
    now.0 - hongbao::voting::ONE_WEEK_IN_SECONDS
}
