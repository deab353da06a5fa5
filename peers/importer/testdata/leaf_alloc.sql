-- Leaf's table of segments, with the columns, types, defaults, key and
-- engine its repository defines (Meituan-Dianping/Leaf,
-- scripts/leaf_alloc.sql at 86a6441d263497b9f9ee321de13422b9c63f0c06):
-- the table ticketd import reads, made as a Leaf deployment has it.
CREATE TABLE `leaf_alloc` (
  `biz_tag` varchar(128) NOT NULL DEFAULT '',
  `max_id` bigint(20) NOT NULL DEFAULT '1',
  `step` int(11) NOT NULL,
  `description` varchar(256) DEFAULT NULL,
  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`biz_tag`)
) ENGINE=InnoDB;
